// Statistics counters of the register map: NUM_GLOBAL_COUNTERS global and
// NUM_ENTRY_COUNTERS per table entry, 64 bits each, incremented by the
// decision (one frame per clock at most) and, for the global counters, by
// increments from outside it (ext_inc: frames dropped in front of the
// decision; a counter incremented by both in one clock gains 2), cleared by
// CONTROL.CLEAR_COUNTERS
// and CONTROL.RESET; a committed entry's counters restart at zero.
// Read port pipelined, panama_engine_pkg::COUNTER_READ_LATENCY = 3 clocks
// from rd_* to rd_value (one read per clock): the entry in two steps (one
// 64-bit value per entry counter), then the counter; the 64-bit value is one
// snapshot (taken in the first stage).
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
    input  wire logic [panama_regmap_pkg::NUM_GLOBAL_COUNTERS-1:0]     ext_inc,
    input  wire logic                                                  entry_inc_valid,
    input  wire logic                                 [ENTRY_BITS-1:0] entry_inc_entry,
    input  wire logic [panama_regmap_pkg::NUM_ENTRY_COUNTERS-1:0]      entry_inc,

    input  wire logic                                                  clear_all,
    input  wire logic                                                  clear_entry_valid,
    input  wire logic                                 [ENTRY_BITS-1:0] clear_entry,

    // rd_entry_counter selects entry counter rd_counter of entry rd_entry,
    // else global counter rd_counter; rd_value three clocks later (0 for a
    // counter number out of range).
    input  wire logic                                                  rd_entry_counter,
    input  wire logic                                 [ENTRY_BITS-1:0] rd_entry,
    input  wire logic                                          [4:0]   rd_counter,
    output logic                                               [63:0]  rd_value
);
  import panama_regmap_pkg::*;

  logic [63:0] gctr[NUM_GLOBAL_COUNTERS];

  for (genvar c = 0; c < NUM_GLOBAL_COUNTERS; c++) begin : g_global
    logic a, b;
    assign a = inc_valid && global_inc[c];
    assign b = ext_inc[c];
    always_ff @(posedge clk) begin
      if (rst || clear_all) gctr[c] <= 64'd0;
      else if (a || b) gctr[c] <= gctr[c] + {62'd0, a && b, a != b};
    end
  end

  // Read: three stages. Entries and global counters are taken in groups of
  // GSIZE (16: a 16:1 multiplexer is one LUT6 and two MUXF levels).
  //   1  each group's candidate (the low index bits), per entry counter
  //   2  the group (the high index bits), per entry counter; the global one
  //   3  the counter
  localparam int LOW = ENTRY_BITS < 4 ? ENTRY_BITS : 4;
  localparam int GSIZE = 1 << LOW;
  localparam int NG = (NUM_ENTRIES + GSIZE - 1) / GSIZE;  // entry groups
  localparam int HIGH = ENTRY_BITS - LOW;                 // group index bits

  logic [64*NUM_ENTRY_COUNTERS-1:0] rd_e2;  // stage 2: counter c in bits [64c +: 64]
  logic                  rd_entry_counter1, rd_entry_counter2;
  logic [4:0]            rd_counter1, rd_counter2;
  logic [ENTRY_BITS-1:0] rd_entry1;
  always_ff @(posedge clk) begin
    rd_entry_counter1 <= rd_entry_counter;
    rd_counter1 <= rd_counter;
    rd_entry1 <= rd_entry;
    rd_entry_counter2 <= rd_entry_counter1;
    rd_counter2 <= rd_counter1;
  end

  // Entry counters: per counter, the entries' values side by side in one
  // vector (a multiplexer reads it; an array would be taken for a memory).
  for (genvar c = 0; c < NUM_ENTRY_COUNTERS; c++) begin : g_counter
    logic [64*NUM_ENTRIES-1:0] ectr;  // entry e in bits [64e +: 64]
    for (genvar e = 0; e < NUM_ENTRIES; e++) begin : g_entry
      logic [63:0] v;
      always_ff @(posedge clk) begin
        if (rst || clear_all || (clear_entry_valid && ENTRY_BITS'(e) == clear_entry)) v <= 64'd0;
        else if (entry_inc_valid && entry_inc_entry == ENTRY_BITS'(e) && entry_inc[c]) v <= v + 64'd1;
      end
      assign ectr[64*e+:64] = v;
    end
    logic [64*NG-1:0] rd1;  // stage 1: group g's candidate in bits [64g +: 64]
    for (genvar g = 0; g < NG; g++) begin : g_group
      localparam int GN = NUM_ENTRIES - g * GSIZE < GSIZE ? NUM_ENTRIES - g * GSIZE : GSIZE;  // entries in the group
      logic [64*GSIZE-1:0] grp;
      assign grp = (64 * GSIZE)'(ectr[64*g*GSIZE+:64*GN]);
      always_ff @(posedge clk) rd1[64*g+:64] <= grp[64*rd_entry[LOW-1:0]+:64];
    end
    if (HIGH == 0) begin : g_one
      always_ff @(posedge clk) rd_e2[64*c+:64] <= rd1[63:0];
    end else begin : g_many
      always_ff @(posedge clk) rd_e2[64*c+:64] <= rd1[64*rd_entry1[ENTRY_BITS-1:LOW]+:64];
    end
  end

  // Global counters: two groups of 16.
  logic [127:0] rd_g1;
  logic [63:0]  rd_g2;
  always_ff @(posedge clk) begin
    rd_g1[63:0] <= gctr[{1'b0, rd_counter[3:0]}];
    rd_g1[127:64] <= {1'b0, rd_counter[3:0]} < 5'(NUM_GLOBAL_COUNTERS - 16) ? gctr[{1'b1, rd_counter[3:0]}] : 64'd0;
    rd_g2 <= rd_counter1[4] ? rd_g1[127:64] : rd_g1[63:0];
  end

  // Stage 3: the counter.
  always_ff @(posedge clk) begin
    rd_value <= 64'd0;
    if (rd_entry_counter2) begin
      if (rd_counter2 < 5'(NUM_ENTRY_COUNTERS)) rd_value <= rd_e2[64*rd_counter2[3:0]+:64];
    end else if (rd_counter2 < 5'(NUM_GLOBAL_COUNTERS)) begin
      rd_value <= rd_g2;
    end
  end

  // The group index bits are used only with more than one group.
  logic unused;
  assign unused = ^rd_entry1;
endmodule
`default_nettype wire
