// Vitis RTL kernel wrapper of the PANAMA engine (hw/rtl/panama_engine.sv):
// the port names and reset polarity Vitis expects of a free-running
// (ap_ctrl_none) RTL kernel. The engine's register map is the kernel's
// s_axi_control address space as is, so the driver reaches it directly.
// The engine's receive frame FIFO takes every beat of the CMAC's receive
// stream (s_axis_tready stays high: a MAC cannot be held back, and VNx's
// clock-crossing FIFO in front, not in packet mode, would drop beats if it
// were) and drops whole frames that do not fit or that are marked bad.
// The module name is hw/vitis/kernels.json's rtl.top_module.
`default_nettype none
module panama_engine_kernel #(
    // Engine sizes; the defaults are those of the HLS kernel (DefaultEngine).
    parameter int NUM_ENTRIES = 64,
    parameter int NUM_SLOTS = 512,
    parameter int SLOT_WORDS = 144,
    // Read latency of the slot memory in clocks: the UltraRAM matrix's read
    // register and output registers, 1 + rows + columns of the matrix
    // (panama_engine's default; docs/rtl.md, "Memories").
    parameter int SLOT_READ_LATENCY = 12
) (
    input  wire logic         ap_clk,
    // Active-low, synchronous to ap_clk (Vitis convention).
    input  wire logic         ap_rst_n,

    // Frames from the network (CMAC receive side); tready is always high.
    input  wire logic [511:0] s_axis_tdata,
    input  wire logic [63:0]  s_axis_tkeep,
    input  wire logic         s_axis_tvalid,
    output logic              s_axis_tready,
    input  wire logic         s_axis_tlast,
    // Bit 0: the MAC marks the frame bad (CMAC rx tuser: bad FCS or PHY
    // error, on the frame's last beat); the engine's receive FIFO drops the
    // frame whole and counts it (DROP_MAC_ERROR). VNx's CMAC kernel has no
    // tuser on its receive stream: the link ties it low (docs/alveo.md).
    input  wire logic [0:0]   s_axis_tuser,

    // Frames to the network (CMAC transmit side).
    output logic      [511:0] m_axis_tdata,
    output logic      [63:0]  m_axis_tkeep,
    output logic              m_axis_tvalid,
    input  wire logic         m_axis_tready,
    output logic              m_axis_tlast,

    // Host control: the engine's register map (include/panama/regmap.hpp).
    input  wire logic [13:0]  s_axi_control_awaddr,
    input  wire logic         s_axi_control_awvalid,
    output logic              s_axi_control_awready,
    input  wire logic [31:0]  s_axi_control_wdata,
    input  wire logic [3:0]   s_axi_control_wstrb,
    input  wire logic         s_axi_control_wvalid,
    output logic              s_axi_control_wready,
    output logic      [1:0]   s_axi_control_bresp,
    output logic              s_axi_control_bvalid,
    input  wire logic         s_axi_control_bready,
    input  wire logic [13:0]  s_axi_control_araddr,
    input  wire logic         s_axi_control_arvalid,
    output logic              s_axi_control_arready,
    output logic      [31:0]  s_axi_control_rdata,
    output logic      [1:0]   s_axi_control_rresp,
    output logic              s_axi_control_rvalid,
    input  wire logic         s_axi_control_rready
);
  // Registered reset: ap_rst_n fans out to the whole engine.
  logic rst_reg = 1'b1;
  always_ff @(posedge ap_clk) rst_reg <= !ap_rst_n;

  // Status ports are for simulation and benchmarks; unused on the card.
  logic unused_idle, unused_stall_in, unused_stall_desc, unused_stall_reg, unused_dec_valid;
  logic [2:0] unused_dec_action;
  logic [4:0] unused_dec_counter;
  logic [7:0] unused_dec_entry;
  logic unused_rx_frame, unused_rx_overflow, unused_rx_bad, unused_in_stall;
  logic [15:0] unused_rx_free;

  panama_engine #(
      .NUM_ENTRIES(NUM_ENTRIES),
      .NUM_SLOTS(NUM_SLOTS),
      .SLOT_WORDS(SLOT_WORDS),
      .SLOT_READ_LATENCY(SLOT_READ_LATENCY)
  ) engine (
      .clk(ap_clk),
      .rst(rst_reg),
      .s_axis_tdata(s_axis_tdata),
      .s_axis_tkeep(s_axis_tkeep),
      .s_axis_tvalid(s_axis_tvalid),
      .s_axis_tready(s_axis_tready),
      .s_axis_tlast(s_axis_tlast),
      .s_axis_tuser(s_axis_tuser),
      .m_axis_tdata(m_axis_tdata),
      .m_axis_tkeep(m_axis_tkeep),
      .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready),
      .m_axis_tlast(m_axis_tlast),
      .s_axil_awaddr(s_axi_control_awaddr),
      .s_axil_awvalid(s_axi_control_awvalid),
      .s_axil_awready(s_axi_control_awready),
      .s_axil_wdata(s_axi_control_wdata),
      .s_axil_wstrb(s_axi_control_wstrb),
      .s_axil_wvalid(s_axi_control_wvalid),
      .s_axil_wready(s_axi_control_wready),
      .s_axil_bresp(s_axi_control_bresp),
      .s_axil_bvalid(s_axi_control_bvalid),
      .s_axil_bready(s_axi_control_bready),
      .s_axil_araddr(s_axi_control_araddr),
      .s_axil_arvalid(s_axi_control_arvalid),
      .s_axil_arready(s_axi_control_arready),
      .s_axil_rdata(s_axi_control_rdata),
      .s_axil_rresp(s_axi_control_rresp),
      .s_axil_rvalid(s_axi_control_rvalid),
      .s_axil_rready(s_axi_control_rready),
      .fwd_drop(2'b00),  // no cage-to-cage paths in the one-port kernel
      .status_idle(unused_idle),
      .status_stall_in_fifo(unused_stall_in),
      .status_stall_desc_fifo(unused_stall_desc),
      .status_stall_reg_write(unused_stall_reg),
      .status_decision_valid(unused_dec_valid),
      .status_decision_action(unused_dec_action),
      .status_decision_counter(unused_dec_counter),
      .status_decision_entry(unused_dec_entry),
      .status_rx_frame(unused_rx_frame),
      .status_rx_drop_overflow(unused_rx_overflow),
      .status_rx_drop_bad(unused_rx_bad),
      .status_rx_free(unused_rx_free),
      .status_in_stall(unused_in_stall)
  );
endmodule
`default_nettype wire
