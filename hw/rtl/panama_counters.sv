// Statistics counters of the register map: NUM_GLOBAL_COUNTERS global and
// NUM_ENTRY_COUNTERS per table entry, 64 bits each, incremented by the
// decision (one frame per clock at most), cleared by CONTROL.CLEAR_COUNTERS
// and CONTROL.RESET; a committed entry's counters restart at zero.
// Read port combinational (latency 0).
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
    // else global counter rd_counter.
    input  wire logic                                                  rd_entry_counter,
    input  wire logic                                 [ENTRY_BITS-1:0] rd_entry,
    input  wire logic                                          [4:0]   rd_counter,
    output logic                                               [63:0]  rd_value
);
  import panama_regmap_pkg::*;

  logic [63:0] gctr[NUM_GLOBAL_COUNTERS];
  logic [63:0] ectr[NUM_ENTRIES][NUM_ENTRY_COUNTERS];

  for (genvar c = 0; c < NUM_GLOBAL_COUNTERS; c++) begin : g_global
    always_ff @(posedge clk) begin
      if (rst || clear_all) gctr[c] <= 64'd0;
      else if (inc_valid && global_inc[c]) gctr[c] <= gctr[c] + 64'd1;
    end
  end
  for (genvar e = 0; e < NUM_ENTRIES; e++) begin : g_entry
    for (genvar c = 0; c < NUM_ENTRY_COUNTERS; c++) begin : g_c
      always_ff @(posedge clk) begin
        if (rst || clear_all || (clear_entry_valid && ENTRY_BITS'(e) == clear_entry)) ectr[e][c] <= 64'd0;
        else if (entry_inc_valid && entry_inc_entry == ENTRY_BITS'(e) && entry_inc[c]) ectr[e][c] <= ectr[e][c] + 64'd1;
      end
    end
  end

  always_comb begin
    rd_value = 64'd0;
    if (rd_entry_counter) begin
      if (rd_counter < 5'(NUM_ENTRY_COUNTERS)) rd_value = ectr[rd_entry][4'(rd_counter)];
    end else if (rd_counter < 5'(NUM_GLOBAL_COUNTERS)) begin
      rd_value = gctr[rd_counter];
    end
  end
endmodule
`default_nettype wire
