// AXI4-Lite register block of the engine: the handshakes, CONTROL and
// UDP_PORT, the read-only identity registers, the address decode of table
// and counter registers, and the 64-bit counter read rule of the register
// map (reading a counter's low word latches its high word, which the next
// read of the high word returns).
//
// Writes are accepted when the address and data are both valid and the
// control pipeline is empty and the table has settled (ctrl_empty), and hold new frames off while they
// wait (write_pending), so every frame sees one configuration. A write is one
// wr_valid pulse to the table.
//
// Reads are pipelined, one at a time (arready is low while a read is
// outstanding), READ_LATENCY = 3 + COUNTER_READ_LATENCY clocks from the
// address handshake to rvalid:
//   R0  the address registered
//   R1  decode; the counter read request and the table read address leave
//       registered; the table's answer and the fixed registers are captured
//   ... the counter read (panama_counters, COUNTER_READ_LATENCY clocks)
//   RL  the response: counter low or high word (or the latched high word),
//       table register, fixed register or 0; rvalid rises the next clock
// The counter value is one 64-bit snapshot, so the low word and the latched
// high word belong together.
`default_nettype none
module panama_axil_regs #(
    // Engine sizes, read back from NUM_ENTRIES, NUM_SLOTS, SLOT_ELEMS.
    parameter int NUM_ENTRIES = 64,
    parameter int NUM_SLOTS = 512,
    parameter int SLOT_CAPACITY = 2304,
    // Entry index bits (derived).
    parameter int ENTRY_BITS = NUM_ENTRIES > 1 ? $clog2(NUM_ENTRIES) : 1
) (
    input  wire logic                          clk,
    input  wire logic                          rst,

    input  wire logic                  [13:0]  s_axil_awaddr,
    input  wire logic                          s_axil_awvalid,
    output logic                               s_axil_awready,
    input  wire logic                  [31:0]  s_axil_wdata,
    input  wire logic                  [3:0]   s_axil_wstrb,
    input  wire logic                          s_axil_wvalid,
    output logic                               s_axil_wready,
    output logic                       [1:0]   s_axil_bresp,
    output logic                               s_axil_bvalid,
    input  wire logic                          s_axil_bready,
    input  wire logic                  [13:0]  s_axil_araddr,
    input  wire logic                          s_axil_arvalid,
    output logic                               s_axil_arready,
    output logic                       [31:0]  s_axil_rdata,
    output logic                       [1:0]   s_axil_rresp,
    output logic                               s_axil_rvalid,
    input  wire logic                          s_axil_rready,

    // The control pipeline holds no frame: a write may proceed.
    input  wire logic                          ctrl_empty,
    output logic                               write_pending,

    // A register write (one pulse) and the commands it carries.
    output logic                               wr_valid,
    output logic                       [13:0]  wr_addr,
    output logic                       [31:0]  wr_data,
    output logic                               cmd_reset,   // CONTROL.RESET
    output logic                               cmd_clear,   // CONTROL.CLEAR_COUNTERS (without RESET)

    // Configuration.
    output logic                               cfg_enabled,
    output logic                       [15:0]  cfg_udp_port,

    // Table registers (panama_table's read port, answered in the same clock).
    output logic                       [13:0]  table_rd_addr,
    input  wire logic                  [31:0]  table_rd_data,
    input  wire logic                          table_rd_hit,

    // Counters (panama_counters' read port, COUNTER_READ_LATENCY clocks).
    output logic                               ctr_rd_entry_counter,
    output logic             [ENTRY_BITS-1:0]  ctr_rd_entry,
    output logic                       [4:0]   ctr_rd_counter,
    input  wire logic                  [63:0]  ctr_rd_value
);
  import panama_regmap_pkg::*;

  localparam int CTR_LAT = panama_engine_pkg::COUNTER_READ_LATENCY;

  logic [13:0] wa;
  logic        do_write;
  logic        enabled_reg;
  logic [15:0] udp_port_reg;
  logic        latched_valid_reg;
  logic [13:0] latched_addr_reg;
  logic [31:0] latched_hi_reg;

  assign wa = {s_axil_awaddr[13:2], 2'b00};
  assign write_pending = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid;
  assign do_write = write_pending && ctrl_empty;
  assign s_axil_awready = do_write;
  assign s_axil_wready = do_write;
  assign s_axil_bresp = 2'b00;
  assign s_axil_rresp = 2'b00;

  assign wr_valid = do_write;
  assign wr_addr = wa;
  assign wr_data = s_axil_wdata;
  assign cmd_reset = do_write && wa == REG_CONTROL && s_axil_wdata[2];
  assign cmd_clear = do_write && wa == REG_CONTROL && !s_axil_wdata[2] && s_axil_wdata[1];
  assign cfg_enabled = enabled_reg;
  assign cfg_udp_port = udp_port_reg;

  always_ff @(posedge clk) begin
    if (rst || cmd_reset) begin
      enabled_reg <= rst ? 1'b1 : s_axil_wdata[0];
      udp_port_reg <= 16'(panama_wire_pkg::DEFAULT_UDP_PORT);
    end else if (do_write) begin
      if (wa == REG_CONTROL) enabled_reg <= s_axil_wdata[0];
      if (wa == REG_UDP_PORT) udp_port_reg <= s_axil_wdata[15:0];
    end
  end

  // ---- Read pipeline: rd_v[k] marks the read in stage Rk.
  localparam int RL = 1 + CTR_LAT;  // the response stage
  logic          rd_busy_reg;       // a read accepted, its response not yet taken
  logic [RL:0]   rd_v;
  logic [13:0]   ra;                // R0: the read address
  assign s_axil_arready = !rd_busy_reg;
  assign table_rd_addr = ra;

  always_ff @(posedge clk) begin
    if (rst) begin
      rd_busy_reg <= 1'b0;
      rd_v <= '0;
    end else begin
      if (s_axil_arvalid && s_axil_arready) rd_busy_reg <= 1'b1;
      else if (s_axil_rvalid && s_axil_rready) rd_busy_reg <= 1'b0;
      rd_v <= {rd_v[RL-1:0], s_axil_arvalid && s_axil_arready};
    end
    if (s_axil_arvalid && s_axil_arready) ra <= {s_axil_araddr[13:2], 2'b00};
  end

  // R1: decode (the counter read port is registered here), table answer and
  // fixed registers captured; held until the response (one read at a time).
  logic        rd_is_counter;
  logic [13:0] rd_off;
  logic [7:0]  rd_e;
  logic [3:0]  rd_c;
  logic        dec_entry_counter;
  logic [ENTRY_BITS-1:0] dec_entry;
  logic [4:0]  dec_counter;
  logic [31:0] fixed_value;
  always_comb begin
    rd_is_counter = 1'b0;
    rd_off = 14'd0;
    rd_e = 8'd0;
    rd_c = 4'd0;
    dec_entry_counter = 1'b0;
    dec_entry = '0;
    dec_counter = 5'd0;
    if (ra >= GLOBAL_COUNTER_BASE && ra < GLOBAL_COUNTER_BASE + 14'(8 * NUM_GLOBAL_COUNTERS)) begin
      rd_off = ra - GLOBAL_COUNTER_BASE;
      rd_is_counter = 1'b1;
      dec_counter = 5'(rd_off >> 3);
    end else if (ra >= ENTRY_COUNTER_BASE && {18'd0, ra} < {18'd0, ENTRY_COUNTER_BASE} +
                 32'(ENTRY_COUNTER_STRIDE) * 32'(NUM_ENTRIES)) begin
      rd_off = ra - ENTRY_COUNTER_BASE;
      rd_e = 8'(rd_off / 14'(ENTRY_COUNTER_STRIDE));
      rd_c = 4'((rd_off % 14'(ENTRY_COUNTER_STRIDE)) >> 3);
      if (rd_c < 4'(NUM_ENTRY_COUNTERS)) begin
        rd_is_counter = 1'b1;
        dec_entry_counter = 1'b1;
        dec_entry = rd_e[ENTRY_BITS-1:0];
        dec_counter = {1'b0, rd_c};
      end
    end
    case (ra)
      REG_ID: fixed_value = ID_VALUE;
      REG_VERSION: fixed_value = VERSION_VALUE;
      REG_NUM_ENTRIES: fixed_value = 32'(NUM_ENTRIES);
      REG_NUM_SLOTS: fixed_value = 32'(NUM_SLOTS);
      REG_SLOT_ELEMS: fixed_value = 32'(SLOT_CAPACITY);
      REG_CONTROL: fixed_value = {31'd0, enabled_reg};
      REG_UDP_PORT: fixed_value = {16'd0, udp_port_reg};
      REG_ELEM_TYPES: fixed_value = 32'hE;  // fp32, bf16 and fp16 (bits 1, 2, 3)
      default: fixed_value = 32'd0;
    endcase
  end

  logic        r_is_counter, r_hi, r_latch_match, r_counter_space, r_table_hit;
  logic [31:0] r_table_data, r_fixed;
  logic [13:0] r_hi_addr;  // the high word's address (latched by a low-word read)
  always_ff @(posedge clk) begin
    if (rd_v[0]) begin
      ctr_rd_entry_counter <= dec_entry_counter;
      ctr_rd_entry <= dec_entry;
      ctr_rd_counter <= dec_counter;
      r_is_counter <= rd_is_counter;
      r_hi <= ra[2];
      r_latch_match <= ra == latched_addr_reg;
      r_counter_space <= ra >= GLOBAL_COUNTER_BASE;
      r_table_hit <= table_rd_hit;
      r_table_data <= table_rd_data;
      r_fixed <= fixed_value;
      r_hi_addr <= ra + 14'd4;
    end
  end

  // RL: the response. ctr_rd_value belongs to the request registered in R1.
  logic [31:0] rd_value;
  always_comb begin
    if (r_is_counter) begin
      if (!r_hi) rd_value = ctr_rd_value[31:0];
      else if (latched_valid_reg && r_latch_match) rd_value = latched_hi_reg;
      else rd_value = ctr_rd_value[63:32];
    end else if (r_counter_space) begin
      rd_value = 32'd0;  // counter space outside the counters
    end else if (r_table_hit) begin
      rd_value = r_table_data;
    end else begin
      rd_value = r_fixed;
    end
  end

  always_ff @(posedge clk) begin
    if (rst || cmd_reset) latched_valid_reg <= 1'b0;
    if (rst) begin
      s_axil_rvalid <= 1'b0;
    end else if (rd_v[RL]) begin
      s_axil_rvalid <= 1'b1;
      s_axil_rdata <= rd_value;
      if (r_is_counter && !r_hi && !cmd_reset) begin
        latched_valid_reg <= 1'b1;
        latched_addr_reg <= r_hi_addr;
        latched_hi_reg <= ctr_rd_value[63:32];
      end
    end else if (s_axil_rready) begin
      s_axil_rvalid <= 1'b0;
    end
    if (rst) s_axil_bvalid <= 1'b0;
    else if (do_write) s_axil_bvalid <= 1'b1;
    else if (s_axil_bready) s_axil_bvalid <= 1'b0;
  end

  // Registers are written whole, as in the model.
  logic unused;
  assign unused = ^{s_axil_wstrb, s_axil_awaddr[1:0], s_axil_araddr[1:0], rd_e[7:ENTRY_BITS > 7 ? 7 : ENTRY_BITS]};
endmodule
`default_nettype wire
