// Synchronous first-word-fall-through FIFO. The memory has one synchronous
// read port whose output register is the FIFO's output register, so it maps
// to block RAM; a push is visible at the output two clocks later and the FIFO
// moves one entry per clock in and out.
`default_nettype none
module panama_fifo #(
    // Bits per entry.
    parameter int WIDTH = 8,
    // Entries in the memory (a power of two); one more sits in the output register.
    parameter int DEPTH = 16,
    // Address bits (derived).
    parameter int ADDR_BITS = $clog2(DEPTH)
) (
    input  wire logic                 clk,
    input  wire logic                 rst,
    input  wire logic [WIDTH-1:0]     s_data,
    input  wire logic                 s_valid,
    output logic                      s_ready,
    output logic      [WIDTH-1:0]     m_data,
    output logic                      m_valid,
    input  wire logic                 m_ready,
    // Entries held (memory plus output register).
    output logic      [ADDR_BITS+1:0] count
);
  initial begin
    if (DEPTH < 2 || (1 << ADDR_BITS) != DEPTH) $error("%m: DEPTH must be a power of two >= 2");
  end

  logic [WIDTH-1:0] mem[DEPTH];
  logic [ADDR_BITS:0] wr_ptr_reg, rd_ptr_reg;
  logic [ADDR_BITS:0] stored;
  logic fetch;

  assign stored = wr_ptr_reg - rd_ptr_reg;
  assign s_ready = stored != DEPTH[ADDR_BITS:0] || ADDR_BITS == 0;
  assign fetch = stored != '0 && (!m_valid || m_ready);
  assign count = {1'b0, stored} + {{(ADDR_BITS + 1) {1'b0}}, m_valid};

  always_ff @(posedge clk) begin
    if (s_valid && s_ready) mem[wr_ptr_reg[ADDR_BITS-1:0]] <= s_data;
    if (fetch) m_data <= mem[rd_ptr_reg[ADDR_BITS-1:0]];
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      wr_ptr_reg <= '0;
      rd_ptr_reg <= '0;
      m_valid <= 1'b0;
    end else begin
      if (s_valid && s_ready) wr_ptr_reg <= wr_ptr_reg + 1'b1;
      if (fetch) rd_ptr_reg <= rd_ptr_reg + 1'b1;
      if (fetch) m_valid <= 1'b1;
      else if (m_ready) m_valid <= 1'b0;
    end
  end
endmodule
`default_nettype wire
