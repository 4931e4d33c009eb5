// panama_fp32_add, stage S2: near-path normalisation. Choice of the
// registered difference and its leading-zero digits, the left shift by the
// count in three 3:1 mux levels, the count in binary (one LUT level), the
// exponent minus the count (carry chain), and the packed near-path
// magnitude (exponent field 0 when the barrier stopped the shift: a
// subnormal result). No rounding: the near-path difference is exact.
`default_nettype none
// Several parts of the adder per file (one module per LUT-level budget).
/* verilator lint_off DECLFILENAME */

// S2: near path, choice of the difference and its leading-zero digits.
(* keep_hierarchy *)
module panama_fp32_add_near_select (
    input  wire logic [24:0] n0ab,
    input  wire logic [24:0] n0ba,
    input  wire logic [24:0] n1ab,
    input  wire logic [24:0] n1ba,
    input  wire logic [5:0]  lz0ab,
    input  wire logic [5:0]  lz0ba,
    input  wire logic [5:0]  lz1ab,
    input  wire logic [5:0]  lz1ba,
    input  wire logic [1:0]  nsel,
    output logic      [24:0] n,
    output logic      [5:0]  lz     // {dig2, dig1, dig0}
);
  always_comb begin
    case (nsel)
      2'd0: {n, lz} = {n0ab, lz0ab};
      2'd1: {n, lz} = {n0ba, lz0ba};
      2'd2: {n, lz} = {n1ab, lz1ab};
      default: {n, lz} = {n1ba, lz1ba};
    endcase
  end
endmodule

// S2: near path, left shift by 9 * dig2 + 3 * dig1 + dig0 in three 3:1 mux
// levels.
(* keep_hierarchy *)
module panama_fp32_add_near_shl (
    input  wire logic [24:0] x,
    input  wire logic [5:0]  lz,
    output logic      [24:0] y
);
  // One level: shift left by d * step (d = 0, 1, 2), zeros in.
  function automatic logic [24:0] shl_digit(input logic [24:0] v, input logic [1:0] d, input int step);
    for (int i = 0; i < 25; i++) begin
      case (d)
        2'd0: shl_digit[i] = v[i];
        2'd1: shl_digit[i] = i >= step ? v[(i+25-step)%25] : 1'b0;
        default: shl_digit[i] = i >= 2 * step ? v[(i+25-2*step)%25] : 1'b0;
      endcase
    end
  endfunction
  assign y = shl_digit(shl_digit(shl_digit(x, lz[1:0], 1), lz[3:2], 3), lz[5:4], 9);
endmodule

// S2: near-path count in binary (one LUT level: six inputs per bit).
(* keep_hierarchy *)
module panama_fp32_add_lzc_binary (
    input  wire logic [5:0] lz,  // {dig2, dig1, dig0}
    output logic      [4:0] cnt
);
  always_comb begin
    cnt = 5'd0;
    for (int i = 0; i < 64; i++) if (lz == 6'(i)) cnt = 5'((i / 16) * 9 + (i / 4 % 4) * 3 + i % 4);
  end
endmodule

// S2: near-path exponent, e minus the count (carry chain).
(* keep_hierarchy *)
module panama_fp32_add_near_exp (
    input  wire logic [7:0] e,
    input  wire logic [4:0] lz,
    output logic      [7:0] ne
);
  assign ne = e - {3'd0, lz};
endmodule

// S2: near-path magnitude: a result that the barrier stopped (top bit clear)
// is subnormal, exponent field 0.
(* keep_hierarchy *)
module panama_fp32_add_near_pack (
    input  wire logic [24:0] nf,
    input  wire logic [7:0]  ne,
    output logic      [30:0] nmag
);
  assign nmag = {nf[24] ? ne : 8'd0, nf[23:1]};
  logic unused;
  assign unused = nf[0];
endmodule

/* verilator lint_on DECLFILENAME */
`default_nettype wire
