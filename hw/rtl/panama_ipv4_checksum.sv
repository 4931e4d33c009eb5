// RFC 1071 sum of an IPv4 header (20 bytes, no options): the one's
// complement sum of its ten 16-bit words, folded to 16 bits the way
// include/panama/wire.hpp folds it.
//   verify:   a header is intact when sum == 16'hFFFF
//   generate: with the checksum field zero, the checksum is ~sum
//
// Pipelined, latency LATENCY = 3 clocks (hdr at clock t, its sum at t + 3),
// one header per clock, no stall (a plain delay line, no valid):
//   S1  three partial sums of the words (0-3, 4-7, 8-9), 18 bits each
//   S2  their total (20 bits) folded once: low 16 bits + the carries
//   S3  the second fold (the first leaves at most 16'hFFFF + 16'hF)
// Each stage is at most two adders in series (scripts/rtl-module-depth.sh).
`default_nettype none
module panama_ipv4_checksum (
    input  wire logic                          clk,
    input  wire panama_wire_pkg::ipv4_header_t hdr,
    output logic                        [15:0] sum
);
  localparam int LATENCY = 3;

  logic [159:0] words;
  logic [15:0]  w[10];
  assign words = hdr;
  always_comb begin
    for (int i = 0; i < 10; i++) w[i] = words[159-16*i-:16];
  end

  // ---- S1: partial sums
  logic [17:0] part_a_reg, part_b_reg, part_c_reg;
  always_ff @(posedge clk) begin
    part_a_reg <= ({2'd0, w[0]} + {2'd0, w[1]}) + ({2'd0, w[2]} + {2'd0, w[3]});
    part_b_reg <= ({2'd0, w[4]} + {2'd0, w[5]}) + ({2'd0, w[6]} + {2'd0, w[7]});
    part_c_reg <= {2'd0, w[8]} + {2'd0, w[9]};
  end

  // ---- S2: total and first fold
  logic [19:0] acc;
  logic [16:0] fold1_reg;
  assign acc = {2'd0, part_a_reg} + {2'd0, part_b_reg} + {2'd0, part_c_reg};
  always_ff @(posedge clk) fold1_reg <= {1'b0, acc[15:0]} + {13'd0, acc[19:16]};

  // ---- S3: second fold
  always_ff @(posedge clk) sum <= fold1_reg[15:0] + {15'd0, fold1_reg[16]};

  logic unused;
  assign unused = ^{LATENCY};
endmodule
`default_nettype wire
