// panama_fp32_add, stage S1: far-path alignment and sticky bits. The three
// alignment candidates (b by ea - eb; a by eb - ea as a normal and as a
// subnormal significand) as 27-bit frames {hidden, fraction, guard, round,
// sticky-position}, each inverted for an effective subtraction and shifted
// right in three mux levels (4:1, 4:1, 2:1 with saturation; the shifted-in
// bits are the subtraction flag). The sticky bit of each: "bits below j are
// zero" flags of the frame for every shift j (two LUT levels from the
// fraction: zero flags of 6-bit blocks, then the flags of both frame forms
// {1, f, 000} and {f, 0000}), then the flag at the actual shift through a
// 32:1 mux tree as deep as the shifter, inverted. Registered at the end of
// S1; stage S2 picks the candidate (panama_fp32_add_far.sv).
`default_nettype none
// Several parts of the adder per file (one module per LUT-level budget).
/* verilator lint_off DECLFILENAME */

// S1: b's far-path significand frame before alignment: {1, fb, 000} or,
// subnormal, {fb, 0000} (shifted by ea - eb instead of ea - 1).
(* keep_hierarchy *)
module panama_fp32_add_b_frame (
    input  wire logic [30:0] b,
    output logic      [26:0] y
);
  assign y = b[30:23] == 8'd0 ? {b[22:0], 4'b0000} : {1'b1, b[22:0], 3'b000};
endmodule

// S1: an alignment candidate inverted for an effective subtraction.
(* keep_hierarchy *)
module panama_fp32_add_sub_invert #(
    parameter int WIDTH = 27
) (
    input  wire logic [WIDTH-1:0] x,
    input  wire logic             sa,
    input  wire logic             sb,
    output logic      [WIDTH-1:0] y,
    output logic                  sub
);
  assign sub = sa ^ sb;
  assign y = x ^ {WIDTH{sa ^ sb}};
endmodule

// S1: low-zero flags of a fraction f, first LUT level: zero flags of the
// 6-bit blocks of f, and for each k whether the bits of k's block below k
// are zero. (Each LUT level of the flags is its own module so that the
// mapper cannot merge them into a deeper shape.)
(* keep_hierarchy *)
module panama_fp32_add_low_zero_blk (
    input  wire logic [22:0] f,
    output logic      [3:0]  blk,   // f[6m+5:6m] == 0
    output logic      [23:0] part   // f[k-1:6*(k/6)] == 0
);
  always_comb begin
    for (int m = 0; m < 4; m++) begin
      blk[m] = 1'b1;
      for (int i = 6 * m; i < 6 * m + 6 && i < 23; i++) if (f[i]) blk[m] = 1'b0;
    end
    for (int k = 0; k < 24; k++) begin
      part[k] = 1'b1;
      for (int i = 6 * (k / 6); i < k; i++) if (f[i]) part[k] = 1'b0;
    end
  end
endmodule

// S1: low-zero flags of f in the two frames {1, f, 000} and {f, 0000}, second
// LUT level: bit j is set when frame bits j-1..0 are all zero (bits 27 and
// up: the whole frame is zero), for the sticky bit of a shift by j.
(* keep_hierarchy *)
module panama_fp32_add_low_zero_frames (
    input  wire logic [3:0]  blk,
    input  wire logic [23:0] part,
    output logic      [31:0] z_n,   // frame {1, f, 000}
    output logic      [31:0] z_s,   // frame {f, 0000}
    output logic             nz_s   // frame {f, 0000} != 0
);
  logic [23:0] lz;  // f[k-1:0] == 0
  always_comb begin
    for (int k = 0; k < 24; k++) begin
      lz[k] = part[k];
      for (int m = 0; m < 4; m++) if (6 * m + 6 <= k && !blk[m]) lz[k] = 1'b0;
    end
    for (int j = 0; j < 32; j++) begin
      z_n[j] = j <= 3 ? 1'b1 : j <= 26 ? lz[(j+21)%24] : 1'b0;
      z_s[j] = j <= 4 ? 1'b1 : lz[j <= 27 ? (j+20)%24 : 23];
    end
    nz_s = !(&blk);
  end
  logic unused;
  assign unused = part[23];
endmodule

// S1: low-zero flags of b's frame (panama_fp32_add_b_frame) from those of its
// two forms.
(* keep_hierarchy *)
module panama_fp32_add_low_zero_b (
    input  wire logic        eb_z,
    input  wire logic [31:0] z_n,
    input  wire logic [31:0] z_s,
    input  wire logic        nz_s,
    output logic      [31:0] z,
    output logic             nz
);
  assign z = eb_z ? z_s : z_n;
  assign nz = !eb_z || nz_s;
endmodule

// S1: sticky bit of an alignment (a frame bit set below the shifted-out
// boundary): the low-zero flag at the shift, a mux tree of the same depth as
// the shifter, one module per LUT level: 4:1 by d[1:0] (and the saturation
// flag), 4:1 by d[3:2], then 2:1 by d[4] with the saturation.
(* keep_hierarchy *)
module panama_fp32_add_sticky_mux01 (
    input  wire logic [31:0] z,     // low-zero flags of the frame
    input  wire logic [1:0]  d,     // shift[1:0]
    input  wire logic [2:0]  d_hi,  // shift[7:5]
    output logic      [7:0]  m,
    output logic             sat
);
  logic [3:0] q;
  always_comb begin
    for (int i = 0; i < 8; i++) begin
      q = z[4*i+:4];
      m[i] = q[d];
    end
    sat = d_hi != 3'd0;
  end
endmodule

(* keep_hierarchy *)
module panama_fp32_add_sticky_mux23 (
    input  wire logic [7:0] m1,
    input  wire logic [1:0] d,  // shift[3:2]
    output logic      [1:0] m
);
  logic [3:0] q;
  always_comb begin
    for (int i = 0; i < 2; i++) begin
      q = m1[4*i+:4];
      m[i] = q[d];
    end
  end
endmodule

(* keep_hierarchy *)
module panama_fp32_add_sticky_mux4 (
    input  wire logic [1:0] m2,
    input  wire logic       d4,   // shift[4]
    input  wire logic       sat,  // shift >= 32
    input  wire logic       nz,   // frame != 0
    output logic            st
);
  assign st = sat ? nz : !(d4 ? m2[1] : m2[0]);
endmodule

// S1: sticky bit of an alignment.
module panama_fp32_add_sticky (
    input  wire logic [31:0] z,   // low-zero flags of the frame
    input  wire logic        nz,  // frame != 0
    input  wire logic [7:0]  d,   // shift
    output logic             st
);
  logic [7:0] m1;
  logic [1:0] m2;
  logic sat;
  panama_fp32_add_sticky_mux01 u_l1 (.z(z), .d(d[1:0]), .d_hi(d[7:5]), .m(m1), .sat(sat));
  panama_fp32_add_sticky_mux23 u_l2 (.m1(m1), .d(d[3:2]), .m(m2));
  panama_fp32_add_sticky_mux4 u_l3 (.m2(m2), .d4(d[4]), .sat(sat), .nz(nz), .st(st));
endmodule

// S1: 27-bit right shift in three mux levels, shifted-in bits `fill`,
// saturating (all `fill`) for shifts of 32 or more.
(* keep_hierarchy *)
module panama_fp32_add_align_shr (
    input  wire logic [26:0] x,
    input  wire logic [7:0]  d,
    input  wire logic        fill,
    output logic      [26:0] y
);
  logic [29:0] l1;
  logic [26:0] l2;
  logic [41:0] w1;
  logic [38:0] w2;
  always_comb begin
    w1 = {{15{fill}}, x};
    for (int i = 0; i < 27; i++) begin
      case (d[1:0])
        2'd0: l1[i] = w1[i];
        2'd1: l1[i] = w1[i+1];
        2'd2: l1[i] = w1[i+2];
        default: l1[i] = w1[i+3];
      endcase
    end
    l1[29:27] = {3{fill}};
    w2 = {{9{fill}}, l1};
    for (int i = 0; i < 27; i++) begin
      case (d[3:2])
        2'd0: l2[i] = w2[i];
        2'd1: l2[i] = w2[i+4];
        2'd2: l2[i] = w2[i+8];
        default: l2[i] = w2[i+12];
      endcase
    end
    for (int i = 0; i < 27; i++) begin
      if (d[7:5] != 3'd0) y[i] = fill;
      else if (d[4]) y[i] = i + 16 < 27 ? l2[(i+16)%27] : fill;
      else y[i] = l2[i];
    end
  end
  logic unused;
  assign unused = ^{w1[41:30], w2[38:30]};
endmodule

/* verilator lint_on DECLFILENAME */
`default_nettype wire
