// Statistics counters of the register map: NUM_GLOBAL_COUNTERS global and
// NUM_ENTRY_COUNTERS per table entry, 64 bits each, incremented by the
// decision (one frame per clock at most), cleared by CONTROL.CLEAR_COUNTERS
// and CONTROL.RESET; a committed entry's counters restart at zero.
// Read port pipelined, panama_engine_pkg::COUNTER_READ_LATENCY = 2 clocks
// from rd_* to rd_value (one read per clock): the first stage picks the
// entry (one 64-bit value per entry counter) and the global counter, the
// second the counter; the 64-bit value is one snapshot.
`default_nettype none
module panama_counters #(
    // Table entries.
    parameter int NUM_ENTRIES = 64,
    // Entry index bits (derived).
    parameter int ENTRY_BITS = NUM_ENTRIES > 1 ? $clog2(NUM_ENTRIES) : 1
) (
    input  wire logic                                                  clk,
    input  wire logic                                                  rst,

    input  wire logic                                                  inc_valid,
    input  wire logic [panama_regmap_pkg::NUM_GLOBAL_COUNTERS-1:0]     global_inc,
    input  wire logic                                                  entry_inc_valid,
    input  wire logic                                 [ENTRY_BITS-1:0] entry_inc_entry,
    input  wire logic [panama_regmap_pkg::NUM_ENTRY_COUNTERS-1:0]      entry_inc,

    input  wire logic                                                  clear_all,
    input  wire logic                                                  clear_entry_valid,
    input  wire logic                                 [ENTRY_BITS-1:0] clear_entry,

    // rd_entry_counter selects entry counter rd_counter of entry rd_entry,
    // else global counter rd_counter; rd_value two clocks later (0 for a
    // counter number out of range).
    input  wire logic                                                  rd_entry_counter,
    input  wire logic                                 [ENTRY_BITS-1:0] rd_entry,
    input  wire logic                                          [4:0]   rd_counter,
    output logic                                               [63:0]  rd_value
);
  import panama_regmap_pkg::*;

  logic [63:0] gctr[NUM_GLOBAL_COUNTERS];

  for (genvar c = 0; c < NUM_GLOBAL_COUNTERS; c++) begin : g_global
    always_ff @(posedge clk) begin
      if (rst || clear_all) gctr[c] <= 64'd0;
      else if (inc_valid && global_inc[c]) gctr[c] <= gctr[c] + 64'd1;
    end
  end

  // Entry counters, one array over the entries per counter (the read picks
  // the entry in each array at once), and read stage 1: the addressed
  // entry's counters.
  logic [64*NUM_ENTRY_COUNTERS-1:0] rd_e1;  // counter c in bits [64c +: 64]
  for (genvar c = 0; c < NUM_ENTRY_COUNTERS; c++) begin : g_counter
    logic [63:0] ectr[NUM_ENTRIES];
    for (genvar e = 0; e < NUM_ENTRIES; e++) begin : g_entry
      always_ff @(posedge clk) begin
        if (rst || clear_all || (clear_entry_valid && ENTRY_BITS'(e) == clear_entry)) ectr[e] <= 64'd0;
        else if (entry_inc_valid && entry_inc_entry == ENTRY_BITS'(e) && entry_inc[c]) ectr[e] <= ectr[e] + 64'd1;
      end
    end
    always_ff @(posedge clk) rd_e1[64*c+:64] <= ectr[rd_entry];
  end

  // Read stage 1: the global counter.
  logic [63:0] rd_g1;
  logic        rd_entry_counter1;
  logic [4:0]  rd_counter1;
  always_ff @(posedge clk) begin
    rd_g1 <= rd_counter < 5'(NUM_GLOBAL_COUNTERS) ? gctr[rd_counter] : 64'd0;
    rd_entry_counter1 <= rd_entry_counter;
    rd_counter1 <= rd_counter;
  end
  // Read stage 2: the counter.
  always_ff @(posedge clk) begin
    rd_value <= 64'd0;
    if (rd_entry_counter1) begin
      if (rd_counter1 < 5'(NUM_ENTRY_COUNTERS)) rd_value <= rd_e1[64*rd_counter1[3:0]+:64];
    end else begin
      rd_value <= rd_g1;
    end
  end
endmodule
`default_nettype wire
