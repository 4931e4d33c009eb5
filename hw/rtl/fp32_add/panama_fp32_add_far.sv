// panama_fp32_add, stage S2: far-path add or subtract. The choice of the
// registered alignment candidate (panama_fp32_add_align.sv) and its sticky
// bit, folded into the LUT that forms the adder's propagate bit, then the
// sum or two's-complement difference with the larger significand on one
// carry chain. Normalisation and rounding follow in panama_fp32_add_round.sv.
`default_nettype none
// A part of the adder named for what it computes, not for this file.
/* verilator lint_off DECLFILENAME */

// S2: far path, choice of the alignment candidate, add or subtract.
(* keep_hierarchy *)
module panama_fp32_add_far_addsub (
    input  wire logic [22:0] fx,
    input  wire logic [26:0] yb,
    input  wire logic [26:0] yan,
    input  wire logic [26:0] yas,
    input  wire logic        stb,
    input  wire logic        stan,
    input  wire logic        stas,
    input  wire logic [1:0]  ysel,
    input  wire logic        sub,
    output logic      [28:0] s      // {carry, frame[26:0], half}
);
  logic [26:0] y;
  logic st;
  logic [29:0] sum;
  always_comb begin
    case (ysel)
      2'd0: begin
        y = yb;
        st = stb;
      end
      2'd1: begin
        y = yan;
        st = stan;
      end
      default: begin
        y = yas;
        st = stas;
      end
    endcase
    // {0, X, 0, 1} + {sub, Y or ~Y, sticky or ~sticky, sub}: the lowest
    // position turns `sub` into the carry of the two's complement.
    sum = {2'b01, fx, 3'b000, 2'b01} + {sub, y, st ^ sub, sub};
    s = sum[29:1];
  end
  logic unused;
  assign unused = sum[0];
endmodule

/* verilator lint_on DECLFILENAME */
`default_nettype wire
