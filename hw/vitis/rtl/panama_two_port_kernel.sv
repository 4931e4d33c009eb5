// Two-port (bump-in-the-wire) Vitis RTL kernel of the PANAMA engine: the
// one-port kernel (panama_engine_kernel) between QSFP28 cage 0 (the switch
// side) and cage 1 (the rest of the link).
//
//   cage 0 RX (s_axis) ──► classify ──PANAMA──► engine ──┐
//                              └──other──► m_axis_p1     ├─► arbiter ─► m_axis (cage 0 TX)
//   cage 1 RX (s_axis_p1) ───────────────────────────────┘
//
// A frame from cage 0 goes to the engine when it is PANAMA by the engine's
// own rule (wire::classify_frame: Ethernet II, IPv4 without options, not a
// non-first fragment, UDP to the engine's UDP_PORT); that decision needs
// only the first 64-byte beat. Every other frame of cage 0 leaves through
// cage 1 untouched, and every frame of cage 1 leaves through cage 0, frame by
// frame with the engine's output (round robin between whole frames).
// UDP_PORT is followed by watching the host's writes to it (and
// CONTROL.RESET, which restores 9600), so the register map stays the
// engine's. The MAC's bad-frame flag (tuser) reaches the engine only; frames
// forwarded port to port carry no such flag (the transmit side has none).
// The module name is hw/vitis/kernels.json's rtl_two_port.top_module.
`default_nettype none
module panama_two_port_kernel #(
    parameter int NUM_ENTRIES = 64,
    parameter int NUM_SLOTS = 512,
    parameter int SLOT_WORDS = 144,
    parameter int SLOT_READ_LATENCY = 3,  // of the engine's slot memory (panama_engine_kernel)
    // Register offsets of include/panama/regmap.hpp (CONTROL, UDP_PORT) and
    // the UDP port after reset.
    parameter logic [13:0] CONTROL_OFFSET = 14'h014,
    parameter logic [13:0] UDP_PORT_OFFSET = 14'h018,
    parameter logic [15:0] UDP_PORT_RESET = 16'd9600
) (
    input  wire logic         ap_clk,
    input  wire logic         ap_rst_n,

    // Cage 0 (switch side): receive and transmit.
    input  wire logic [511:0] s_axis_tdata,
    input  wire logic [63:0]  s_axis_tkeep,
    input  wire logic         s_axis_tvalid,
    output logic              s_axis_tready,
    input  wire logic         s_axis_tlast,
    input  wire logic [0:0]   s_axis_tuser,
    output logic      [511:0] m_axis_tdata,
    output logic      [63:0]  m_axis_tkeep,
    output logic              m_axis_tvalid,
    input  wire logic         m_axis_tready,
    output logic              m_axis_tlast,

    // Cage 1 (far side): receive and transmit.
    input  wire logic [511:0] s_axis_p1_tdata,
    input  wire logic [63:0]  s_axis_p1_tkeep,
    input  wire logic         s_axis_p1_tvalid,
    output logic              s_axis_p1_tready,
    input  wire logic         s_axis_p1_tlast,
    input  wire logic [0:0]   s_axis_p1_tuser,
    output logic      [511:0] m_axis_p1_tdata,
    output logic      [63:0]  m_axis_p1_tkeep,
    output logic              m_axis_p1_tvalid,
    input  wire logic         m_axis_p1_tready,
    output logic              m_axis_p1_tlast,

    // Host control: the engine's register map.
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
  logic rst;
  always_ff @(posedge ap_clk) rst <= !ap_rst_n;

  // ---- UDP_PORT, followed from the host's writes -------------------------
  logic [13:2] wr_addr;  // word address
  logic [15:0] wr_data;  // UDP_PORT and CONTROL use the low half only
  logic [1:0]  wr_strb;
  logic [15:0] udp_port;
  always_ff @(posedge ap_clk) begin
    if (s_axi_control_awvalid && s_axi_control_awready) wr_addr <= s_axi_control_awaddr[13:2];
    if (s_axi_control_wvalid && s_axi_control_wready) begin
      wr_data <= s_axi_control_wdata[15:0];
      wr_strb <= s_axi_control_wstrb[1:0];
    end
    // The engine has taken the write once it answers it.
    if (rst) begin
      udp_port <= UDP_PORT_RESET;
    end else if (s_axi_control_bvalid && s_axi_control_bready && s_axi_control_bresp == 2'b00) begin
      if (wr_addr == UDP_PORT_OFFSET[13:2]) begin
        if (wr_strb[0]) udp_port[7:0] <= wr_data[7:0];
        if (wr_strb[1]) udp_port[15:8] <= wr_data[15:8];
      end else if (wr_addr == CONTROL_OFFSET[13:2] && wr_strb[0] && wr_data[2]) begin
        udp_port <= UDP_PORT_RESET;
      end
    end
  end

  // ---- Cage 0 receive: PANAMA frames to the engine, the rest to cage 1 ---
  // Byte i of the first beat is tdata[8*i +: 8] (wire order).
  logic first_is_panama;
  always_comb begin
    first_is_panama = s_axis_tkeep[37]  // bytes 0..37 present
        && s_axis_tdata[8*12 +: 8] == 8'h08 && s_axis_tdata[8*13 +: 8] == 8'h00  // IPv4
        && s_axis_tdata[8*14 +: 8] == 8'h45                                     // no options
        && s_axis_tdata[8*23 +: 8] == 8'd17                                     // UDP
        && s_axis_tdata[8*20 +: 5] == 5'd0 && s_axis_tdata[8*21 +: 8] == 8'd0    // first fragment
        && s_axis_tdata[8*36 +: 8] == udp_port[15:8] && s_axis_tdata[8*37 +: 8] == udp_port[7:0];
  end
  logic in_frame, to_engine_reg;
  wire  to_engine = in_frame ? to_engine_reg : first_is_panama;

  logic         e_in_tvalid, e_in_tready;
  assign e_in_tvalid = s_axis_tvalid && to_engine;
  assign m_axis_p1_tvalid = s_axis_tvalid && !to_engine;
  assign m_axis_p1_tdata = s_axis_tdata;
  assign m_axis_p1_tkeep = s_axis_tkeep;
  assign m_axis_p1_tlast = s_axis_tlast;
  assign s_axis_tready = to_engine ? e_in_tready : m_axis_p1_tready;
  always_ff @(posedge ap_clk) begin
    if (rst) begin
      in_frame <= 1'b0;
      to_engine_reg <= 1'b0;
    end else if (s_axis_tvalid && s_axis_tready) begin
      in_frame <= !s_axis_tlast;
      to_engine_reg <= to_engine;
    end
  end

  // ---- The engine -------------------------------------------------------
  logic [511:0] e_out_tdata;
  logic [63:0]  e_out_tkeep;
  logic         e_out_tvalid, e_out_tready, e_out_tlast;
  panama_engine_kernel #(
      .NUM_ENTRIES(NUM_ENTRIES),
      .NUM_SLOTS(NUM_SLOTS),
      .SLOT_WORDS(SLOT_WORDS),
      .SLOT_READ_LATENCY(SLOT_READ_LATENCY)
  ) engine (
      .ap_clk(ap_clk),
      .ap_rst_n(ap_rst_n),
      .s_axis_tdata(s_axis_tdata),
      .s_axis_tkeep(s_axis_tkeep),
      .s_axis_tvalid(e_in_tvalid),
      .s_axis_tready(e_in_tready),
      .s_axis_tlast(s_axis_tlast),
      .s_axis_tuser(s_axis_tuser),
      .m_axis_tdata(e_out_tdata),
      .m_axis_tkeep(e_out_tkeep),
      .m_axis_tvalid(e_out_tvalid),
      .m_axis_tready(e_out_tready),
      .m_axis_tlast(e_out_tlast),
      .s_axi_control_awaddr(s_axi_control_awaddr),
      .s_axi_control_awvalid(s_axi_control_awvalid),
      .s_axi_control_awready(s_axi_control_awready),
      .s_axi_control_wdata(s_axi_control_wdata),
      .s_axi_control_wstrb(s_axi_control_wstrb),
      .s_axi_control_wvalid(s_axi_control_wvalid),
      .s_axi_control_wready(s_axi_control_wready),
      .s_axi_control_bresp(s_axi_control_bresp),
      .s_axi_control_bvalid(s_axi_control_bvalid),
      .s_axi_control_bready(s_axi_control_bready),
      .s_axi_control_araddr(s_axi_control_araddr),
      .s_axi_control_arvalid(s_axi_control_arvalid),
      .s_axi_control_arready(s_axi_control_arready),
      .s_axi_control_rdata(s_axi_control_rdata),
      .s_axi_control_rresp(s_axi_control_rresp),
      .s_axi_control_rvalid(s_axi_control_rvalid),
      .s_axi_control_rready(s_axi_control_rready)
  );

  // ---- Cage 0 transmit: engine output and cage 1 frames, whole frames ----
  logic busy, sel_p1_reg, prefer_p1;
  logic sel_p1;
  always_comb begin
    if (busy) sel_p1 = sel_p1_reg;
    else if (e_out_tvalid && s_axis_p1_tvalid) sel_p1 = prefer_p1;
    else sel_p1 = s_axis_p1_tvalid;
  end
  assign m_axis_tvalid = sel_p1 ? s_axis_p1_tvalid : e_out_tvalid;
  assign m_axis_tdata = sel_p1 ? s_axis_p1_tdata : e_out_tdata;
  assign m_axis_tkeep = sel_p1 ? s_axis_p1_tkeep : e_out_tkeep;
  assign m_axis_tlast = sel_p1 ? s_axis_p1_tlast : e_out_tlast;
  assign e_out_tready = !sel_p1 && m_axis_tready;
  assign s_axis_p1_tready = sel_p1 && m_axis_tready;
  always_ff @(posedge ap_clk) begin
    if (rst) begin
      busy <= 1'b0;
      sel_p1_reg <= 1'b0;
      prefer_p1 <= 1'b0;
    end else if (m_axis_tvalid && m_axis_tready) begin
      busy <= !m_axis_tlast;
      sel_p1_reg <= sel_p1;
      if (m_axis_tlast) prefer_p1 <= !sel_p1;
    end
  end

  // Cage 1's bad-frame flag has nowhere to go (see above).
  logic unused_p1_tuser;
  assign unused_p1_tuser = s_axis_p1_tuser[0];
endmodule
`default_nettype wire
