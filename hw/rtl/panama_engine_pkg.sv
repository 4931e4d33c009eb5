// Types and codes shared by the modules of the RTL engine (panama_engine and
// its parts): the records that travel between pipeline stages, so every
// stage reads named fields instead of slicing a concatenation.
`default_nettype none
package panama_engine_pkg;
  // Largest (job, tree) table and fan-in the records can carry.
  localparam int MAX_ENTRIES = 256;
  localparam int MAX_FAN_IN = 64;
  // Clocks from panama_counters' read request to its value (the register
  // block's read pipeline waits this long).
  localparam int COUNTER_READ_LATENCY = 3;

  // Action kinds of the data pipeline.
  localparam logic [2:0] K_PASS = 3'd0, K_DROP = 3'd1, K_FIRST = 3'd2, K_ADD = 3'd3, K_READ = 3'd4;
  // Classification verdicts.
  localparam logic [1:0] V_PASS = 2'd0, V_DROP = 2'd1, V_PANAMA = 2'd2;
  // EngineAction codes (hw/hls/include/panama/engine.hpp).
  localparam logic [2:0] A_PASSED = 3'd0, A_AGGREGATED = 3'd1, A_EMITTED = 3'd2, A_REEMITTED = 3'd3,
      A_DROPPED = 3'd4;
  // Bank states of a slot generation.
  localparam logic [1:0] S_EMPTY = 2'd0, S_ACC = 2'd1, S_DONE = 2'd2;

  // Input descriptor, pushed at a frame's tlast.
  typedef struct packed {
    logic [511:0] first_beat;
    logic [15:0]  len;        // bytes (saturates above the largest frame)
    logic [15:0]  beats;      // beats (saturating)
    logic         mac_error;  // tuser[0] was set on some beat of the frame
  } frame_desc_t;

  // What the classifier keeps of a frame for the rest of the control pipeline.
  typedef struct packed {
    logic [1:0]  verdict;  // V_*
    logic [4:0]  counter;  // global counter of a pass or a drop
    logic        retrans;
    logic [15:0] job;
    logic [7:0]  tree;
    logic [15:0] child;
    logic [31:0] seq;
    logic [15:0] cwnd;
    logic [15:0] elems;
    logic [1:0]  etype;  // elem_type[1:0]: 1 fp32, 2 bf16, 3 fp16 (when the verdict is V_PANAMA)
    logic [1:0]  ecn;
    logic [15:0] len;
    logic [7:0]  beats;  // beats stored in the input FIFO
  } frame_fields_t;

  // One (job, tree) table entry (engine.hpp TableEntry).
  typedef struct packed {
    logic        enabled;
    logic        root;
    logic [15:0] job;
    logic [7:0]  tree;
    logic [7:0]  fan_in;
    logic [63:0] mask;
    logic [31:0] base;
    logic [31:0] count;
    logic [15:0] out_child;
    logic [47:0] eth_dst;
    logic [47:0] eth_src;
    logic [31:0] ip_src;
    logic [31:0] ip_dst;
    logic [15:0] udp_src;
    logic [15:0] udp_dst;
    logic [7:0]  ttl;
    logic [5:0]  dscp;
  } table_entry_t;

  // The decision's verdict on a frame, for the header and action builder.
  typedef struct packed {
    logic [2:0]  kind;     // K_*
    logic        emit;     // an aggregate (or a re-emission) leaves
    logic        retrans;  // re-emission of a finished slot
    logic [7:0]  beats;    // input beats stored
    logic [15:0] len;      // input bytes
    logic [7:0]  entry;
    logic [31:0] base;     // first slot-memory word of the slot bank
    logic [1:0]  ecn;
    logic [15:0] cwnd;
    logic [15:0] elems;
    logic [1:0]  etype;    // the bank's element type (1 fp32, 2 bf16, 3 fp16)
    logic [31:0] seq;
  } decided_t;

  // One frame's work for the data pipeline.
  typedef struct packed {
    logic [2:0]   kind;
    logic         emit;
    logic [1:0]   etype;      // element type of the payload and the slot bank (1 fp32, 2 bf16, 3 fp16)
    logic [7:0]   in_beats;   // beats popped from the input FIFO
    logic [7:0]   words;      // payload beats that read or write the slot memory: half rows (fp32) or rows (16-bit)
    logic [7:0]   out_beats;  // beats sent
    logic [7:0]   issue;      // beats the issuer runs (max of in and out)
    logic [15:0]  out_len;    // bytes sent, 0 when none
    logic [31:0]  base;       // the bank's first slot word (512-bit half-row units, even)
    logic [511:0] hdr;        // emitted first beat
  } action_t;
  // Population count of each 16-bit quarter of a 64-bit vector (tkeep, a
  // child mask): quarter q's count in bits [5q +: 5]. One clock of logic in
  // the stages that use it; the quarters are added in the next.
  function automatic logic [19:0] quarter_ones(input logic [63:0] v);
    logic [4:0] n;
    for (int q = 0; q < 4; q++) begin
      n = 5'd0;
      for (int i = 0; i < 16; i++) n = n + {4'd0, v[16*q+i]};
      quarter_ones[5*q+:5] = n;
    end
  endfunction
endpackage
`default_nettype wire
