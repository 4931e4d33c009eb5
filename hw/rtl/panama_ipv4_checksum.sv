// RFC 1071 sum of an IPv4 header (20 bytes, no options): the one's
// complement sum of its ten 16-bit words, folded to 16 bits the way
// include/panama/wire.hpp folds it. Combinational (latency 0).
//   verify:   a header is intact when sum == 16'hFFFF
//   generate: with the checksum field zero, the checksum is ~sum
`default_nettype none
module panama_ipv4_checksum (
    input  wire panama_wire_pkg::ipv4_header_t hdr,
    output logic                        [15:0] sum
);
  logic [159:0] words;
  logic [19:0]  acc;
  logic [16:0]  fold1;
  logic [15:0]  fold2;

  assign words = hdr;
  always_comb begin
    acc = 20'd0;
    for (int i = 0; i < 10; i++) acc = acc + {4'd0, words[159-16*i-:16]};
    // Two folds: the first leaves at most 16'hFFFF + 16'hF, the second fits.
    fold1 = {1'b0, acc[15:0]} + {13'd0, acc[19:16]};
    fold2 = fold1[15:0] + {15'd0, fold1[16]};
  end
  assign sum = fold2;
endmodule
`default_nettype wire
