// Formal harness: the engine's AXI4-Lite register block (panama_axil_regs).
// The master is assumed to follow AXI4-Lite (a valid stays high with its
// address and data until the handshake); the block must then:
//   - accept a write's address and data in the same clock, only when both
//     are valid;
//   - give exactly one write response per accepted write, holding bvalid
//     until bready;
//   - give exactly one read response per accepted read, READ_LATENCY clocks
//     after the address handshake (the register block's read pipeline),
//     holding rvalid and rdata until rready, with one read outstanding at
//     most (arready low meanwhile);
//   - pulse the internal register write exactly on accepted writes.
`default_nettype none
module formal_axil_regs (
    input wire logic        clk,
    input wire logic        rst,
    input wire logic [13:0] s_axil_awaddr,
    input wire logic        s_axil_awvalid,
    input wire logic [31:0] s_axil_wdata,
    input wire logic [3:0]  s_axil_wstrb,
    input wire logic        s_axil_wvalid,
    input wire logic        s_axil_bready,
    input wire logic [13:0] s_axil_araddr,
    input wire logic        s_axil_arvalid,
    input wire logic        s_axil_rready,
    input wire logic        ctrl_empty,
    input wire logic [31:0] table_rd_data,
    input wire logic        table_rd_hit,
    input wire logic [63:0] ctr_rd_value
);
  logic        s_axil_awready, s_axil_wready, s_axil_bvalid, s_axil_arready, s_axil_rvalid;
  logic [1:0]  s_axil_bresp, s_axil_rresp;
  logic [31:0] s_axil_rdata;
  logic        write_pending, wr_valid, cmd_reset, cmd_clear, cfg_enabled;
  logic [13:0] wr_addr, table_rd_addr;
  logic [31:0] wr_data;
  logic [15:0] cfg_udp_port;
  logic        ctr_rd_entry_counter;
  logic [0:0]  ctr_rd_entry;
  logic [4:0]  ctr_rd_counter;

  panama_axil_regs #(
      .NUM_ENTRIES(2),
      .NUM_SLOTS(4),
      .SLOT_CAPACITY(32)
  ) dut (
      .clk(clk),
      .rst(rst),
      .s_axil_awaddr(s_axil_awaddr),
      .s_axil_awvalid(s_axil_awvalid),
      .s_axil_awready(s_axil_awready),
      .s_axil_wdata(s_axil_wdata),
      .s_axil_wstrb(s_axil_wstrb),
      .s_axil_wvalid(s_axil_wvalid),
      .s_axil_wready(s_axil_wready),
      .s_axil_bresp(s_axil_bresp),
      .s_axil_bvalid(s_axil_bvalid),
      .s_axil_bready(s_axil_bready),
      .s_axil_araddr(s_axil_araddr),
      .s_axil_arvalid(s_axil_arvalid),
      .s_axil_arready(s_axil_arready),
      .s_axil_rdata(s_axil_rdata),
      .s_axil_rresp(s_axil_rresp),
      .s_axil_rvalid(s_axil_rvalid),
      .s_axil_rready(s_axil_rready),
      .ctrl_empty(ctrl_empty),
      .write_pending(write_pending),
      .wr_valid(wr_valid),
      .wr_addr(wr_addr),
      .wr_data(wr_data),
      .cmd_reset(cmd_reset),
      .cmd_clear(cmd_clear),
      .cfg_enabled(cfg_enabled),
      .cfg_udp_port(cfg_udp_port),
      .table_rd_addr(table_rd_addr),
      .table_rd_data(table_rd_data),
      .table_rd_hit(table_rd_hit),
      .ctr_rd_entry_counter(ctr_rd_entry_counter),
      .ctr_rd_entry(ctr_rd_entry),
      .ctr_rd_counter(ctr_rd_counter),
      .ctr_rd_value(ctr_rd_value)
  );

`ifdef FORMAL
  logic f_past_valid = 1'b0;
  always @(posedge clk) f_past_valid <= 1'b1;
  always @(*) if (!f_past_valid) assume (rst);

  // The master follows AXI4-Lite.
  always @(posedge clk) begin
    if (f_past_valid && !$past(rst)) begin
      if ($past(s_axil_awvalid && !s_axil_awready)) assume (s_axil_awvalid && s_axil_awaddr == $past(s_axil_awaddr));
      if ($past(s_axil_wvalid && !s_axil_wready))
        assume (s_axil_wvalid && s_axil_wdata == $past(s_axil_wdata) && s_axil_wstrb == $past(s_axil_wstrb));
      if ($past(s_axil_arvalid && !s_axil_arready)) assume (s_axil_arvalid && s_axil_araddr == $past(s_axil_araddr));
    end
  end

  // Clocks from a read's address handshake to rvalid.
  localparam int READ_LATENCY = 3 + panama_engine_pkg::COUNTER_READ_LATENCY;

  // Outstanding transactions: accepted, response not yet taken; clocks since
  // the outstanding read was accepted (saturating).
  logic [1:0] f_writes = 2'd0, f_reads = 2'd0;
  logic [3:0] f_read_age = 4'd0;
  always @(posedge clk) begin
    if (rst) begin
      f_writes <= 2'd0;
      f_reads <= 2'd0;
    end else begin
      f_writes <= f_writes + 2'(s_axil_awvalid && s_axil_awready) - 2'(s_axil_bvalid && s_axil_bready);
      f_reads <= f_reads + 2'(s_axil_arvalid && s_axil_arready) - 2'(s_axil_rvalid && s_axil_rready);
    end
    if (rst || (s_axil_arvalid && s_axil_arready)) f_read_age <= 4'd0;
    else if (f_read_age != 4'hF) f_read_age <= f_read_age + 4'd1;
  end

  always @(*) begin
    if (f_past_valid && !rst) begin
      assert (s_axil_awready == s_axil_wready);
      if (s_axil_awready) assert (s_axil_awvalid && s_axil_wvalid);
      assert (wr_valid == (s_axil_awvalid && s_axil_awready));
      assert (s_axil_bresp == 2'b00 && s_axil_rresp == 2'b00);
    end
  end

  always @(posedge clk) begin
    if (f_past_valid && !$past(rst)) begin
      assert (f_writes == 2'(s_axil_bvalid));
      // one read outstanding at most; a response only for an accepted read,
      // and exactly READ_LATENCY clocks after its address handshake
      assert (f_reads <= 2'd1);
      if (s_axil_rvalid) assert (f_reads == 2'd1);
      if (f_reads == 2'd1 && 4'(f_read_age) < 4'(READ_LATENCY - 1)) assert (!s_axil_rvalid);
      if (f_reads == 2'd1 && 4'(f_read_age) >= 4'(READ_LATENCY - 1)) assert (s_axil_rvalid);
      if ($past(s_axil_bvalid && !s_axil_bready)) assert (s_axil_bvalid);
      if ($past(s_axil_rvalid && !s_axil_rready)) assert (s_axil_rvalid && s_axil_rdata == $past(s_axil_rdata));
      if (f_reads != 2'd0) assert (!s_axil_arready);
    end
  end
`endif
endmodule
`default_nettype wire
