// Two-port (bump-in-the-wire) Vitis RTL kernel of the PANAMA engine: the
// engine (panama_engine, registered reset as in panama_engine_kernel)
// between QSFP28 cage 0 (the switch side) and cage 1 (the rest of the link).
//
//   s_axis ─► [R0] ─┬─PANAMA─► engine (receive frame FIFO inside) ─┐
//   (cage 0 RX)     └─other──► frame FIFO 0→1 ─► [T1] ─► m_axis_p1 (cage 1 TX)
//                                                   ├─► arbiter ─► [T0] ─► m_axis (cage 0 TX)
//   s_axis_p1 ─► frame FIFO 1→0 ────────────────────┘
//   (cage 1 RX)
//
// A frame from cage 0 goes to the engine when it is PANAMA by the engine's
// own rule (wire::classify_frame: Ethernet II, IPv4 without options, not a
// non-first fragment, UDP to the engine's UDP_PORT); that decision needs
// only the first 64-byte beat. Every other frame of cage 0 leaves through
// cage 1 untouched, and every frame of cage 1 leaves through cage 0, frame by
// frame with the engine's output (round robin between whole frames).
// UDP_PORT is followed by watching the host's writes to it (and
// CONTROL.RESET, which restores 9600), so the register map stays the
// engine's.
//
// Neither receive side is ever held back (s_axis_tready and
// s_axis_p1_tready are high): a MAC's receive stream cannot be stopped, and
// VNx's receive clock-crossing FIFO, not in packet mode, would drop beats
// and merge frames if it were. Every receive path ends in a receive frame
// FIFO (panama_rx_frame_fifo) that takes every beat and drops whole frames:
// the engine's own (frames that do not fit: DROP_RX_OVERFLOW; frames the MAC
// marks bad, tuser: DROP_MAC_ERROR), cage 0's frames for cage 1
// (FWD_0TO1_DROPPED) and cage 1's frames for cage 0 (FWD_1TO0_DROPPED), the
// last two counted through the engine's fwd_drop input. A frame cut by a
// reset is discarded up to its tlast by the frame FIFO of its path, so its
// tail never leaves as a frame (R0 and the route are not reset, so that
// FIFO sees every beat of the frame).
//
// Every stream port is registered: R0 is a register (route decided on the
// beat as it enters, kept for the frame), the frame FIFOs' inputs and
// outputs are registers, and T0 and T1 are register slices
// (panama_two_port_slice), so each tvalid the kernel drives is a flip-flop,
// each tready it receives only enables flip-flops, and no combinational path
// crosses the kernel from one port to another or runs through the arbiter.
// The route of a beat is decided as it enters R0 and travels with it (a
// host write to UDP_PORT applies from the next frame on). A stalled
// transmit side holds back only the frames for it: cage 1's transmit side
// the frames in FIFO 0→1, cage 0's the engine's output and FIFO 1→0; what
// arrives for a path while its FIFO is full is dropped whole and counted.
// The arbiter's grant is a register that changes between frames only; after
// a frame it passes to the other source whenever that one has a frame
// waiting, so with both busy they alternate frame by frame.
// The module name is hw/vitis/kernels.json's rtl_two_port.top_module.
`default_nettype none
module panama_two_port_kernel #(
    parameter int NUM_ENTRIES = 64,
    parameter int NUM_SLOTS = 512,
    parameter int SLOT_WORDS = 144,
    parameter int SLOT_READ_LATENCY = 12,  // of the engine's slot memory (panama_engine_kernel; docs/rtl.md)
    // The engine's receive frame FIFO in beats (panama_engine).
    parameter int RX_FIFO_DEPTH = 1024,
    // Beats held by each cage-to-cage frame FIFO while the transmit side
    // behind it is stalled (a power of two; 512: three 9600-byte frames of
    // 150 beats; block RAM, 512 x 577 bits).
    parameter int PASS_FIFO_DEPTH = 512,
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
  // Every beat is taken. The route is decided on the first beat as it
  // enters R0 and kept for the frame. Byte i of a beat is tdata[8*i +: 8]
  // (wire order).
  logic first_is_panama;
  always_comb begin
    first_is_panama = s_axis_tkeep[37]  // bytes 0..37 present
        && s_axis_tdata[8*12 +: 8] == 8'h08 && s_axis_tdata[8*13 +: 8] == 8'h00  // IPv4
        && s_axis_tdata[8*14 +: 8] == 8'h45                                     // no options
        && s_axis_tdata[8*23 +: 8] == 8'd17                                     // UDP
        && s_axis_tdata[8*20 +: 5] == 5'd0 && s_axis_tdata[8*21 +: 8] == 8'd0    // first fragment
        && s_axis_tdata[8*36 +: 8] == udp_port[15:8] && s_axis_tdata[8*37 +: 8] == udp_port[7:0];
  end
  // in_frame follows every beat and, like the route of the frame, is not
  // reset: a frame cut by a reset keeps its route, so the frame FIFO of that
  // route sees all of its beats and discards its tail (R0 is not reset
  // either; the FIFOs discard what arrives during a reset).
  logic rx0_in_frame = 1'b0;
  logic rx0_to_engine_reg = 1'b0;
  wire  rx0_to_engine = rx0_in_frame ? rx0_to_engine_reg : first_is_panama;
  always_ff @(posedge ap_clk) begin
    if (s_axis_tvalid) begin
      rx0_in_frame <= !s_axis_tlast;
      rx0_to_engine_reg <= rx0_to_engine;
    end
  end
  assign s_axis_tready = 1'b1;

  // R0: the beat and its route.
  logic [511:0] r0_tdata;
  logic [63:0]  r0_tkeep;
  logic         r0_tlast, r0_tuser, r0_to_engine;
  logic         r0_valid = 1'b0;
  always_ff @(posedge ap_clk) begin
    r0_valid <= s_axis_tvalid;
    r0_tdata <= s_axis_tdata;
    r0_tkeep <= s_axis_tkeep;
    r0_tlast <= s_axis_tlast;
    r0_tuser <= s_axis_tuser[0];
    r0_to_engine <= rx0_to_engine;
  end

  // ---- Cage 0 to cage 1: frame FIFO 0→1 and T1 ---------------------------
  logic [511:0] p01_tdata;
  logic [63:0]  p01_tkeep;
  logic         p01_tvalid, p01_tready, p01_tlast;
  logic         p01_frame, p01_drop_overflow, p01_drop_bad, p01_empty;
  logic [$clog2(PASS_FIFO_DEPTH):0] p01_free;
  panama_rx_frame_fifo #(
      .DEPTH(PASS_FIFO_DEPTH)
  ) fifo_0to1 (
      .clk(ap_clk),
      .rst(rst),
      .s_axis_tdata(r0_tdata),
      .s_axis_tkeep(r0_tkeep),
      .s_axis_tvalid(r0_valid && !r0_to_engine),
      .s_axis_tlast(r0_tlast),
      .s_axis_tuser(r0_tuser),
      .m_axis_tdata(p01_tdata),
      .m_axis_tkeep(p01_tkeep),
      .m_axis_tvalid(p01_tvalid),
      .m_axis_tready(p01_tready),
      .m_axis_tlast(p01_tlast),
      .status_frame(p01_frame),
      .status_drop_overflow(p01_drop_overflow),
      .status_drop_bad(p01_drop_bad),
      .status_free(p01_free),
      .status_empty(p01_empty)
  );
  panama_two_port_slice #(.WIDTH(512 + 64 + 1)) t1 (
      .clk(ap_clk),
      .rst(rst),
      .s_data({p01_tlast, p01_tkeep, p01_tdata}),
      .s_valid(p01_tvalid),
      .s_ready(p01_tready),
      .m_data({m_axis_p1_tlast, m_axis_p1_tkeep, m_axis_p1_tdata}),
      .m_valid(m_axis_p1_tvalid),
      .m_ready(m_axis_p1_tready)
  );

  // ---- Cage 1 receive: frame FIFO 1→0 --------------------------------------
  logic [511:0] f1_tdata;
  logic [63:0]  f1_tkeep;
  logic         f1_valid, f1_ready, f1_tlast;
  logic         f1_frame, f1_drop_overflow, f1_drop_bad, f1_empty;
  logic [$clog2(PASS_FIFO_DEPTH):0] f1_free;
  panama_rx_frame_fifo #(
      .DEPTH(PASS_FIFO_DEPTH)
  ) fifo_1to0 (
      .clk(ap_clk),
      .rst(rst),
      .s_axis_tdata(s_axis_p1_tdata),
      .s_axis_tkeep(s_axis_p1_tkeep),
      .s_axis_tvalid(s_axis_p1_tvalid),
      .s_axis_tlast(s_axis_p1_tlast),
      .s_axis_tuser(s_axis_p1_tuser[0]),
      .m_axis_tdata(f1_tdata),
      .m_axis_tkeep(f1_tkeep),
      .m_axis_tvalid(f1_valid),
      .m_axis_tready(f1_ready),
      .m_axis_tlast(f1_tlast),
      .status_frame(f1_frame),
      .status_drop_overflow(f1_drop_overflow),
      .status_drop_bad(f1_drop_bad),
      .status_free(f1_free),
      .status_empty(f1_empty)
  );
  assign s_axis_p1_tready = 1'b1;

  // ---- The engine -------------------------------------------------------
  // Registered reset, as panama_engine_kernel's: ap_rst_n fans out to the
  // whole engine.
  logic engine_rst = 1'b1;
  always_ff @(posedge ap_clk) engine_rst <= !ap_rst_n;
  logic [511:0] e_out_tdata;
  logic [63:0]  e_out_tkeep;
  logic         e_out_tvalid, e_out_tready, e_out_tlast;
  logic         e_in_tready;  // always high
  logic         unused_idle, unused_stall_in, unused_stall_desc, unused_stall_reg, unused_dec_valid;
  logic [2:0]   unused_dec_action;
  logic [4:0]   unused_dec_counter;
  logic [7:0]   unused_dec_entry;
  logic         unused_rx_frame, unused_rx_overflow, unused_rx_bad, unused_in_stall;
  logic [15:0]  unused_rx_free;
  panama_engine #(
      .NUM_ENTRIES(NUM_ENTRIES),
      .NUM_SLOTS(NUM_SLOTS),
      .SLOT_WORDS(SLOT_WORDS),
      .SLOT_READ_LATENCY(SLOT_READ_LATENCY),
      .RX_FIFO_DEPTH(RX_FIFO_DEPTH)
  ) engine (
      .clk(ap_clk),
      .rst(engine_rst),
      .s_axis_tdata(r0_tdata),
      .s_axis_tkeep(r0_tkeep),
      .s_axis_tvalid(r0_valid && r0_to_engine),
      .s_axis_tready(e_in_tready),
      .s_axis_tlast(r0_tlast),
      .s_axis_tuser(r0_tuser),
      .m_axis_tdata(e_out_tdata),
      .m_axis_tkeep(e_out_tkeep),
      .m_axis_tvalid(e_out_tvalid),
      .m_axis_tready(e_out_tready),
      .m_axis_tlast(e_out_tlast),
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
      .fwd_drop({f1_drop_overflow || f1_drop_bad, p01_drop_overflow || p01_drop_bad}),
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
  // Status outputs are for simulation and benchmarks.
  logic unused;
  assign unused = ^{e_in_tready, unused_idle, unused_stall_in, unused_stall_desc, unused_stall_reg, unused_dec_valid,
                    unused_dec_action, unused_dec_counter, unused_dec_entry, unused_rx_frame, unused_rx_overflow,
                    unused_rx_bad, unused_rx_free, unused_in_stall, p01_frame, p01_empty, p01_free, f1_frame,
                    f1_empty, f1_free};

  // ---- Cage 0 transmit: engine output and cage 1's frames, then T0 --------
  // grant: the source the arbiter passes (1: cage 1), a register that
  // changes only between frames. locked: inside a frame of that source.
  // served: that source has just sent a frame and the other had none
  // waiting then; it keeps the grant (a next frame of its own follows
  // without a gap) until the other has one, which then goes first (yield).
  logic grant, locked, served;
  logic arb_valid, arb_other, arb_last, arb_yield, arb_offer, arb_xfer, t0_ready;
  logic [576:0] arb_data;
  assign arb_valid = grant ? f1_valid : e_out_tvalid;
  assign arb_other = grant ? e_out_tvalid : f1_valid;
  assign arb_last = grant ? f1_tlast : e_out_tlast;
  assign arb_data = grant ? {f1_tlast, f1_tkeep, f1_tdata} : {e_out_tlast, e_out_tkeep, e_out_tdata};
  assign arb_yield = !locked && served && arb_other;
  assign arb_offer = arb_valid && !arb_yield;
  assign arb_xfer = arb_offer && t0_ready;
  // Registers and one gate: T0's tready, the valids and the grant state are
  // all registers (the frame FIFO's tvalid is its output register).
  assign e_out_tready = !grant && t0_ready && !arb_yield;
  assign f1_ready = grant && t0_ready && !arb_yield;
  always_ff @(posedge ap_clk) begin
    if (rst) begin
      grant <= 1'b0;
      locked <= 1'b0;
      served <= 1'b0;
    end else if (arb_xfer) begin
      locked <= !arb_last;
      served <= arb_last && !arb_other;
      if (arb_last && arb_other) grant <= !grant;
    end else if (!locked && arb_other && (!arb_valid || served)) begin
      grant <= !grant;
      served <= 1'b0;
    end
  end

  panama_two_port_slice #(.WIDTH(512 + 64 + 1)) t0 (
      .clk(ap_clk),
      .rst(rst),
      .s_data(arb_data),
      .s_valid(arb_offer),
      .s_ready(t0_ready),
      .m_data({m_axis_tlast, m_axis_tkeep, m_axis_tdata}),
      .m_valid(m_axis_tvalid),
      .m_ready(m_axis_tready)
  );
endmodule

// AXI4-Stream register slice (skid buffer) of the two-port kernel: m_valid,
// m_data and s_ready are registers, and m_ready only enables registers, so
// it cuts the valid, data and ready paths alike at full throughput (one
// beat per clock in and out). While
// m_valid && !m_ready, m_valid and m_data hold (AXI4-Stream); the beat that
// s_ready promised meanwhile waits in the skid register.
/* verilator lint_off DECLFILENAME */
module panama_two_port_slice #(
    parameter int WIDTH = 8
) (
    input  wire logic             clk,
    input  wire logic             rst,
    input  wire logic [WIDTH-1:0] s_data,
    input  wire logic             s_valid,
    output logic                  s_ready,
    output logic      [WIDTH-1:0] m_data,
    output logic                  m_valid,
    input  wire logic             m_ready
);
  /* verilator lint_on DECLFILENAME */
  // s_ready is a register of its own, low in reset: it equals !skid_valid
  // from the first clock after reset on.
  logic [WIDTH-1:0] skid_data;
  logic             skid_valid, accept;
  assign accept = s_valid && s_ready;
  always_ff @(posedge clk) begin
    if (rst) begin
      m_valid <= 1'b0;
      skid_valid <= 1'b0;
      s_ready <= 1'b0;
    end else if (!m_valid || m_ready) begin
      // The output register takes the skid's beat, else the input's.
      m_valid <= skid_valid || accept;
      skid_valid <= 1'b0;
      s_ready <= 1'b1;
    end else if (accept) begin
      // The output holds; the beat s_ready promised waits in the skid.
      skid_valid <= 1'b1;
      s_ready <= 1'b0;
    end else begin
      s_ready <= !skid_valid;
    end
  end
  // Data without reset: only meaningful under the valids above.
  always_ff @(posedge clk) begin
    if (!m_valid || m_ready) m_data <= skid_valid ? skid_data : s_data;
    if (m_valid && !m_ready && accept) skid_data <= s_data;
  end
endmodule
`default_nettype wire
