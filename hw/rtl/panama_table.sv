// The (job, tree) table: NUM_ENTRIES entries, the staging registers through
// which the host writes one (E_* registers, ENTRY_INDEX, ENTRY_CMD,
// ENTRY_STATUS), the commit checks of engine.hpp (fan-in, slot range,
// overlap with enabled entries, duplicate key), and the read ports of the
// control pipeline. Every commit is checked, whatever its own enable bit: a
// disabled entry may not be committed over another enabled entry's slots or
// with an enabled entry's key either. A rejected commit changes nothing; an
// accepted one clears only its own slot range (commit_base .. commit_end).
//
// Register writes arrive from panama_axil_regs as one-clock pulses while
// the control pipeline is empty and `ready` is high (CHECK_CLOCKS = 6 clocks
// after the last write; a write takes effect the clock after its pulse), so a frame never sees half a command and a commit
// sees the checks of the state it applies to.
// Ports of the control pipeline, all with registered outputs:
//   lookup   key at clock t; the match of every entry registered at t + 1
//            (one comparator per entry, the CAM); hit, entry index and the
//            entry's share (count) at t + 3, ORs of the matches (enabled
//            keys are unique) per group of 8 entries at t + 2, then over
//            the groups
//   decide / header   entry index at t, the entry registered at t + 2
//            (an 8:1 multiplexer per clock)
`default_nettype none
module panama_table #(
    // Table entries (1..256).
    parameter int NUM_ENTRIES = 64,
    // Packet-memory slots entries share (slot ranges must lie inside).
    parameter int NUM_SLOTS = 512,
    // Entry index bits (derived).
    parameter int ENTRY_BITS = NUM_ENTRIES > 1 ? $clog2(NUM_ENTRIES) : 1
) (
    input  wire logic                                clk,
    input  wire logic                                rst,

    // Register writes (one pulse per AXI4-Lite write) and CONTROL.RESET.
    input  wire logic                                wr_valid,
    input  wire logic                        [13:0]  wr_addr,
    input  wire logic                        [31:0]  wr_data,
    input  wire logic                                clear_all,
    // The commit checks have settled: a register write may proceed.
    output logic                                     ready,

    // Register reads (ENTRY_INDEX, ENTRY_STATUS, E_*); rd_hit when the
    // address is one of them.
    input  wire logic                        [13:0]  rd_addr,
    output logic                             [31:0]  rd_data,
    output logic                                     rd_hit,

    // A commit that succeeds this clock: its entry (whose counters restart)
    // and its slot range (whose slots restart empty).
    output logic                                     commit_valid,
    output logic                  [ENTRY_BITS-1:0]   commit_entry,
    output logic                             [31:0]  commit_base,
    output logic                             [31:0]  commit_end,

    // Lookup by key (latency 3): hit, entry and its share (count, low 16
    // bits) for the divider.
    input  wire logic                        [15:0]  lookup_job,
    input  wire logic                        [7:0]   lookup_tree,
    output logic                                     lookup_hit,
    output logic                  [ENTRY_BITS-1:0]   lookup_entry,
    output logic                             [15:0]  lookup_share,

    // Read ports of the decision and the header builder (latency 2).
    input  wire logic             [ENTRY_BITS-1:0]   decide_idx,
    output panama_engine_pkg::table_entry_t          decide_entry,
    input  wire logic             [ENTRY_BITS-1:0]   header_idx,
    output panama_engine_pkg::table_entry_t          header_entry
);
  import panama_regmap_pkg::*;
  import panama_engine_pkg::*;
  localparam int NUM_STAGED = 16;  // E_KEY .. E_IP_TTL_DSCP

  initial begin
    if (NUM_ENTRIES < 1 || NUM_ENTRIES > MAX_ENTRIES) $error("%m: NUM_ENTRIES must be 1..256");
    if (NUM_SLOTS < 1 || NUM_SLOTS > 65535) $error("%m: NUM_SLOTS must be 1..65535");
    if (REG_E_KEY[5:0] != 6'd0 || REG_E_IP_TTL_DSCP != REG_E_KEY + 14'(4 * (NUM_STAGED - 1)))
      $error("%m: the staged registers must be 16 words aligned to 64 bytes");
  end

  logic [31:0] entry_index_reg;
  logic [31:0] entry_status_reg;
  // The staged registers, flat (word k at bits 32k+31..32k), and as words.
  logic [32*NUM_STAGED-1:0] staged_flat_reg;
  logic [31:0]              staged_reg[NUM_STAGED];
  always_comb begin
    for (int k = 0; k < NUM_STAGED; k++) staged_reg[k] = staged_flat_reg[32*k+:32];
  end

  logic        ent_enabled[NUM_ENTRIES];
  logic        ent_root[NUM_ENTRIES];
  logic [15:0] ent_job[NUM_ENTRIES];
  logic [7:0]  ent_tree[NUM_ENTRIES];
  logic [7:0]  ent_fan_in[NUM_ENTRIES];
  logic [63:0] ent_mask[NUM_ENTRIES];
  logic [31:0] ent_base[NUM_ENTRIES];
  logic [31:0] ent_count[NUM_ENTRIES];
  logic [15:0] ent_out_child[NUM_ENTRIES];
  logic [47:0] ent_eth_dst[NUM_ENTRIES];
  logic [47:0] ent_eth_src[NUM_ENTRIES];
  logic [31:0] ent_ip_src[NUM_ENTRIES];
  logic [31:0] ent_ip_dst[NUM_ENTRIES];
  logic [15:0] ent_udp_src[NUM_ENTRIES];
  logic [15:0] ent_udp_dst[NUM_ENTRIES];
  logic [7:0]  ent_ttl[NUM_ENTRIES];
  logic [5:0]  ent_dscp[NUM_ENTRIES];

  logic [31:0] ent_end[NUM_ENTRIES];  // ent_base + ent_count, kept for the overlap check

  // Read ports, two stages: R1 reads entry (index mod 8) of each group of
  // 8 entries, R2 picks the group (two 8:1 multiplexers in series instead of
  // one NUM_ENTRIES:1; up to 32:1 in R2 for 256 entries). The entries are
  // read as flat vectors (Yosys 0.23 mis-handles unpacked arrays of structs).
  localparam int EW = $bits(decide_entry);
  localparam int NUM_GROUPS = (NUM_ENTRIES + 7) / 8;
  // Group g's 8 entries side by side: entry 8g + k at bits EW*k.
  logic [8*EW-1:0] grp_vec[NUM_GROUPS];
  always_comb begin
    for (int g = 0; g < NUM_GROUPS; g++) begin
      grp_vec[g] = '0;
      for (int k = 0; k < 8; k++)
        if (8 * g + k < NUM_ENTRIES)
          grp_vec[g][EW*k+:EW] = {ent_enabled[8*g+k], ent_root[8*g+k], ent_job[8*g+k], ent_tree[8*g+k],
                                  ent_fan_in[8*g+k], ent_mask[8*g+k], ent_base[8*g+k], ent_count[8*g+k],
                                  ent_out_child[8*g+k], ent_eth_dst[8*g+k], ent_eth_src[8*g+k], ent_ip_src[8*g+k],
                                  ent_ip_dst[8*g+k], ent_udp_src[8*g+k], ent_udp_dst[8*g+k], ent_ttl[8*g+k],
                                  ent_dscp[8*g+k]};
    end
  end
  logic [2:0]    decide_lo, header_lo;
  logic [7:0]    decide_hi_reg, header_hi_reg;
  logic [EW-1:0] decide_grp[NUM_GROUPS], header_grp[NUM_GROUPS];
  logic [EW-1:0] decide_grp_reg[NUM_GROUPS], header_grp_reg[NUM_GROUPS];
  always_comb begin
    for (int g = 0; g < NUM_GROUPS; g++) begin
      case (decide_lo)
        3'd0: decide_grp[g] = grp_vec[g][0*EW+:EW];
        3'd1: decide_grp[g] = grp_vec[g][1*EW+:EW];
        3'd2: decide_grp[g] = grp_vec[g][2*EW+:EW];
        3'd3: decide_grp[g] = grp_vec[g][3*EW+:EW];
        3'd4: decide_grp[g] = grp_vec[g][4*EW+:EW];
        3'd5: decide_grp[g] = grp_vec[g][5*EW+:EW];
        3'd6: decide_grp[g] = grp_vec[g][6*EW+:EW];
        default: decide_grp[g] = grp_vec[g][7*EW+:EW];
      endcase
      case (header_lo)
        3'd0: header_grp[g] = grp_vec[g][0*EW+:EW];
        3'd1: header_grp[g] = grp_vec[g][1*EW+:EW];
        3'd2: header_grp[g] = grp_vec[g][2*EW+:EW];
        3'd3: header_grp[g] = grp_vec[g][3*EW+:EW];
        3'd4: header_grp[g] = grp_vec[g][4*EW+:EW];
        3'd5: header_grp[g] = grp_vec[g][5*EW+:EW];
        3'd6: header_grp[g] = grp_vec[g][6*EW+:EW];
        default: header_grp[g] = grp_vec[g][7*EW+:EW];
      endcase
    end
  end
  logic [EW-1:0] decide_flat, header_flat;
  assign decide_lo = 3'(decide_idx);
  assign header_lo = 3'(header_idx);
  always_ff @(posedge clk) begin
    decide_hi_reg <= 8'({8'd0, decide_idx} >> 3);
    header_hi_reg <= 8'({8'd0, header_idx} >> 3);
    for (int g = 0; g < NUM_GROUPS; g++) begin
      decide_grp_reg[g] <= decide_grp[g];
      header_grp_reg[g] <= header_grp[g];
    end
  end
  always_comb begin
    decide_flat = '0;
    header_flat = '0;
    for (int g = 0; g < NUM_GROUPS; g++) begin
      if (decide_hi_reg == 8'(g)) decide_flat = decide_grp_reg[g];
      if (header_hi_reg == 8'(g)) header_flat = header_grp_reg[g];
    end
  end
  always_ff @(posedge clk) begin
    decide_entry <= decide_flat;
    header_entry <= header_flat;
  end

  // Lookup L1: one comparator per entry (job and tree apart).
  logic [NUM_ENTRIES-1:0] match_job_reg, match_tree_reg, match_reg;
  always_ff @(posedge clk) begin
    for (int i = 0; i < NUM_ENTRIES; i++) begin
      match_job_reg[i] <= ent_enabled[i] && ent_job[i] == lookup_job;
      match_tree_reg[i] <= ent_tree[i] == lookup_tree;
    end
  end
  assign match_reg = match_job_reg & match_tree_reg;
  // Lookup L2, L3: enabled keys are unique (a commit that would duplicate
  // one fails), so at most one entry matches and the hit, the index and the
  // share are ORs over the matches: no priority chain, no index
  // multiplexer. L2 ORs each group of 8 entries, L3 the groups.
  localparam int NUM_LGROUPS = (NUM_ENTRIES + 7) / 8;
  logic                  grp_hit[NUM_LGROUPS];
  logic [ENTRY_BITS-1:0] grp_entry[NUM_LGROUPS];
  logic [15:0]           grp_share[NUM_LGROUPS];
  logic                  grp_hit_reg[NUM_LGROUPS];
  logic [ENTRY_BITS-1:0] grp_entry_reg[NUM_LGROUPS];
  logic [15:0]           grp_share_reg[NUM_LGROUPS];
  always_comb begin
    for (int g = 0; g < NUM_LGROUPS; g++) begin
      grp_hit[g] = 1'b0;
      grp_entry[g] = '0;
      grp_share[g] = 16'd0;
      for (int k = 0; k < 8; k++) begin
        if (8 * g + k < NUM_ENTRIES) begin
          grp_hit[g] = grp_hit[g] | match_reg[8*g+k];
          grp_entry[g] = grp_entry[g] | (match_reg[8*g+k] ? ENTRY_BITS'(8 * g + k) : '0);
          grp_share[g] = grp_share[g] | (match_reg[8*g+k] ? ent_count[8*g+k][15:0] : 16'd0);
        end
      end
    end
  end
  always_ff @(posedge clk) begin
    for (int g = 0; g < NUM_LGROUPS; g++) begin
      grp_hit_reg[g] <= grp_hit[g];
      grp_entry_reg[g] <= grp_entry[g];
      grp_share_reg[g] <= grp_share[g];
    end
  end
  logic                  hit_next;
  logic [ENTRY_BITS-1:0] entry_next;
  logic [15:0]           share_next;
  always_comb begin
    hit_next = 1'b0;
    entry_next = '0;
    share_next = 16'd0;
    for (int g = 0; g < NUM_LGROUPS; g++) begin
      hit_next = hit_next | grp_hit_reg[g];
      entry_next = entry_next | grp_entry_reg[g];
      share_next = share_next | grp_share_reg[g];
    end
  end
  always_ff @(posedge clk) begin
    lookup_hit <= hit_next;
    lookup_entry <= entry_next;
    lookup_share <= share_next;
  end

  // The staged entry, decoded (engine.hpp decode_staged), and its checks.
  // The checks run over CHECK_CLOCKS registered stages, so no path crosses
  // all entries at once; `ready` holds register writes off until they have
  // settled after the last change (table state changes only on a write or a
  // reset).
  // K0 (cmd_onehot_reg, the decoded ENTRY_INDEX) .. K5 (st_status_reg).
  localparam int CHECK_CLOCKS = 6;
  logic        n_en, n_root;
  logic [15:0] n_job;
  logic [7:0]  n_tree, n_fan_in;
  logic [63:0] n_mask;
  logic [31:0] n_base, n_cnt;
  logic [ENTRY_BITS-1:0] cmd_entry;
  always_comb begin
    n_job = staged_reg[0][15:0];
    n_tree = staged_reg[0][23:16];
    n_en = staged_reg[1][0];
    n_root = staged_reg[1][1];
    n_fan_in = staged_reg[2] > 32'd255 ? 8'd255 : staged_reg[2][7:0];
    n_mask = {staged_reg[4], staged_reg[3]};
    n_base = staged_reg[5];
    n_cnt = staged_reg[6];
    cmd_entry = entry_index_reg[ENTRY_BITS-1:0];
  end

  // K1: per 16 bits of the child mask its population count; the range
  // checks and the staged range's end; per entry: is another entry than
  // the indexed one, enabled, with the staged key.
  logic [4:0]             mask_ones16_reg[4];
  logic [7:0]             n_fan_in_reg;
  logic                   bad_range_reg;
  logic [31:0]            n_end_reg;  // one past the staged range
  logic [NUM_ENTRIES-1:0] other_reg, same_key_reg;
  logic [4:0]             mask_ones16[4];
  logic [19:0]            mask_ones_all;
  always_comb begin
    mask_ones_all = panama_engine_pkg::quarter_ones(n_mask);
    for (int q = 0; q < 4; q++) mask_ones16[q] = mask_ones_all[5*q+:5];
  end
  always_ff @(posedge clk) begin
    for (int q = 0; q < 4; q++) mask_ones16_reg[q] <= mask_ones16[q];
    n_fan_in_reg <= n_fan_in;
    bad_range_reg <= n_cnt == 32'd0 || n_cnt > 32'hFFFF || n_base >= 32'(NUM_SLOTS) ||
        n_cnt > 32'(NUM_SLOTS) - n_base;
    n_end_reg <= n_base + n_cnt;
    for (int i = 0; i < NUM_ENTRIES; i++) begin
      other_reg[i] <= !cmd_onehot_reg[i] && ent_enabled[i];
      same_key_reg[i] <= !cmd_onehot_reg[i] && ent_enabled[i] && ent_job[i] == n_job && ent_tree[i] == n_tree;
    end
  end

  // K2: the whole population count; per entry, the overlap of the ranges.
  logic [6:0]             mask_ones_reg;
  logic [7:0]             n_fan_in_k2_reg;
  logic                   bad_range_k2_reg;
  logic [NUM_ENTRIES-1:0] overlap_reg, same_key_k2_reg;
  always_ff @(posedge clk) begin
    mask_ones_reg <= ({2'd0, mask_ones16_reg[0]} + {2'd0, mask_ones16_reg[1]}) +
        ({2'd0, mask_ones16_reg[2]} + {2'd0, mask_ones16_reg[3]});
    n_fan_in_k2_reg <= n_fan_in_reg;
    bad_range_k2_reg <= bad_range_reg;
    for (int i = 0; i < NUM_ENTRIES; i++)
      overlap_reg[i] <= other_reg[i] && n_base < ent_end[i] && ent_base[i] < n_end_reg;
    same_key_k2_reg <= same_key_reg;
  end

  // K3: fan-in against the mask; the lowest conflicting entry; per group of
  // 8 entries, any conflict.
  localparam int NUM_KGROUPS = (NUM_ENTRIES + 7) / 8;
  logic                   bad_fan_in_reg, bad_range_k3_reg;
  logic [NUM_ENTRIES-1:0] conflict, first_conflict_reg, overlap_k3_reg;
  logic [NUM_KGROUPS-1:0] conflict_grp, conflict_grp_reg;
  always_comb begin
    conflict = overlap_reg | same_key_k2_reg;
    for (int g = 0; g < NUM_KGROUPS; g++) begin
      conflict_grp[g] = 1'b0;
      for (int k = 0; k < 8; k++)
        if (8 * g + k < NUM_ENTRIES) conflict_grp[g] = conflict_grp[g] | conflict[8*g+k];
    end
  end
  always_ff @(posedge clk) begin
    bad_fan_in_reg <= n_fan_in_k2_reg == 8'd0 || n_fan_in_k2_reg > 8'(MAX_FAN_IN) ||
        {1'b0, n_fan_in_k2_reg} > {2'b0, mask_ones_reg};
    bad_range_k3_reg <= bad_range_k2_reg;
    conflict_grp_reg <= conflict_grp;
    first_conflict_reg <= conflict & (~conflict + NUM_ENTRIES'(1));  // lowest set bit
    overlap_k3_reg <= overlap_reg;
  end

  // K4: any conflict; per group, whether the first conflicting entry (if
  // in the group) overlaps (overlap first within an entry).
  logic                   bad_fan_in_k4_reg, bad_range_k4_reg, any_conflict_k4_reg;
  logic [NUM_KGROUPS-1:0] first_overlaps_grp, first_overlaps_grp_reg;
  always_comb begin
    for (int g = 0; g < NUM_KGROUPS; g++) begin
      first_overlaps_grp[g] = 1'b0;
      for (int k = 0; k < 8; k++)
        if (8 * g + k < NUM_ENTRIES)
          first_overlaps_grp[g] = first_overlaps_grp[g] | (first_conflict_reg[8*g+k] && overlap_k3_reg[8*g+k]);
    end
  end
  always_ff @(posedge clk) begin
    bad_fan_in_k4_reg <= bad_fan_in_reg;
    bad_range_k4_reg <= bad_range_k3_reg;
    any_conflict_k4_reg <= conflict_grp_reg != '0;
    first_overlaps_grp_reg <= first_overlaps_grp;
  end

  // K5: the status in the model's order.
  logic [31:0] st_status, st_status_reg;
  always_comb begin
    st_status = STATUS_OK;
    if (bad_fan_in_k4_reg) st_status = STATUS_BAD_FAN_IN;
    else if (bad_range_k4_reg) st_status = STATUS_BAD_SLOT_RANGE;
    else if (any_conflict_k4_reg)
      st_status = first_overlaps_grp_reg != '0 ? STATUS_SLOT_OVERLAP : STATUS_DUPLICATE_KEY;
  end
  always_ff @(posedge clk) st_status_reg <= st_status;

  // Clocks until st_status_reg reflects the current state.
  // ready_reg is settle_reg == 0, kept as a register of its own (the
  // engine's admission and credit logic read it).
  logic [2:0] settle_reg;
  logic       ready_reg;
  always_ff @(posedge clk) begin
    // A write lands the clock after its pulse (wv_reg) and reads
    // st_status_reg the clock after that: CHECK_CLOCKS after the pulse.
    if (rst || clear_all || wr_valid) begin
      settle_reg <= 3'(CHECK_CLOCKS);
      ready_reg <= 1'b0;
    end else begin
      if (settle_reg != 3'd0) settle_reg <= settle_reg - 3'd1;
      ready_reg <= settle_reg <= 3'd1;
    end
  end
  assign ready = ready_reg;

  // Register writes and CONTROL.RESET are registered on entry (they come
  // from the AXI4-Lite decode) and act one clock later; `ready` went low on
  // the write already.
  logic        wv_reg, clear_reg;
  logic        wa_index_reg, wa_cmd_reg, wa_staged_reg;  // the address decoded
  logic [3:0]  wa_word_reg;                              // staged register
  logic [31:0] wd_reg;
  logic        wd_commit_reg, wd_load_reg, wd_disable_reg;  // the command decoded
  always_ff @(posedge clk) begin
    wv_reg <= !rst && wr_valid;
    clear_reg <= !rst && clear_all;
    wa_index_reg <= wr_addr == REG_ENTRY_INDEX;
    wa_cmd_reg <= wr_addr == REG_ENTRY_CMD;
    wa_staged_reg <= wr_addr[13:6] == REG_E_KEY[13:6];  // REG_E_KEY .. REG_E_IP_TTL_DSCP, 16 words
    wa_word_reg <= wr_addr[5:2];
    wd_reg <= wr_data;
    wd_commit_reg <= wr_data == CMD_COMMIT;
    wd_load_reg <= wr_data == CMD_LOAD;
    wd_disable_reg <= wr_data == CMD_DISABLE;
  end

  // Flags of the settled state, registered (they change only on writes);
  // the entry ENTRY_INDEX names, in the staged registers' layout (CMD_LOAD).
  logic                   index_ok_reg, st_ok_reg;
  logic [NUM_ENTRIES-1:0] cmd_onehot_reg;
  logic [32*NUM_STAGED-1:0] load_reg;
  always_ff @(posedge clk) begin
    index_ok_reg <= entry_index_reg < 32'(NUM_ENTRIES);
    st_ok_reg <= st_status == STATUS_OK;
    for (int e = 0; e < NUM_ENTRIES; e++) cmd_onehot_reg[e] <= entry_index_reg == 32'(e);
    load_reg[31:0] <= {8'd0, ent_tree[cmd_entry], ent_job[cmd_entry]};
    load_reg[63:32] <= {30'd0, ent_root[cmd_entry], ent_enabled[cmd_entry]};
    load_reg[95:64] <= {24'd0, ent_fan_in[cmd_entry]};
    load_reg[127:96] <= ent_mask[cmd_entry][31:0];
    load_reg[159:128] <= ent_mask[cmd_entry][63:32];
    load_reg[191:160] <= ent_base[cmd_entry];
    load_reg[223:192] <= ent_count[cmd_entry];
    load_reg[255:224] <= {16'd0, ent_out_child[cmd_entry]};
    load_reg[287:256] <= ent_eth_dst[cmd_entry][31:0];
    load_reg[319:288] <= {16'd0, ent_eth_dst[cmd_entry][47:32]};
    load_reg[351:320] <= ent_eth_src[cmd_entry][31:0];
    load_reg[383:352] <= {16'd0, ent_eth_src[cmd_entry][47:32]};
    load_reg[415:384] <= ent_ip_src[cmd_entry];
    load_reg[447:416] <= ent_ip_dst[cmd_entry];
    load_reg[479:448] <= {ent_udp_dst[cmd_entry], ent_udp_src[cmd_entry]};
    load_reg[511:480] <= {18'd0, ent_dscp[cmd_entry], ent_ttl[cmd_entry]};
  end

  logic is_cmd, cmd_known, do_commit, do_load, do_disable;
  always_comb begin
    is_cmd = wv_reg && wa_cmd_reg;
    cmd_known = wd_commit_reg || wd_load_reg || wd_disable_reg;
    do_commit = is_cmd && index_ok_reg && wd_commit_reg && st_ok_reg;
    do_load = is_cmd && index_ok_reg && wd_load_reg;
    do_disable = is_cmd && index_ok_reg && wd_disable_reg;
  end
  assign commit_valid = do_commit;
  assign commit_entry = cmd_entry;
  assign commit_base = n_base;
  assign commit_end = n_end_reg;

  always_ff @(posedge clk) begin
    if (rst || clear_reg) begin
      entry_index_reg <= 32'd0;
      entry_status_reg <= STATUS_OK;
      staged_flat_reg <= '0;
      for (int e = 0; e < NUM_ENTRIES; e++) begin
        ent_enabled[e] <= 1'b0;
        ent_root[e] <= 1'b0;
        ent_job[e] <= 16'd0;
        ent_tree[e] <= 8'd0;
        ent_fan_in[e] <= 8'd0;
        ent_mask[e] <= 64'd0;
        ent_base[e] <= 32'd0;
        ent_count[e] <= 32'd0;
        ent_end[e] <= 32'd0;
        ent_out_child[e] <= 16'd0;
        ent_eth_dst[e] <= 48'd0;
        ent_eth_src[e] <= 48'd0;
        ent_ip_src[e] <= 32'd0;
        ent_ip_dst[e] <= 32'd0;
        ent_udp_src[e] <= 16'd0;
        ent_udp_dst[e] <= 16'd0;
        ent_ttl[e] <= 8'd0;
        ent_dscp[e] <= 6'd0;
      end
    end else if (wv_reg) begin
      if (wa_index_reg) entry_index_reg <= wd_reg;
      if (is_cmd) begin
        if (!cmd_known) entry_status_reg <= STATUS_BAD_COMMAND;
        else if (!index_ok_reg) entry_status_reg <= STATUS_BAD_INDEX;
        else if (wd_commit_reg) entry_status_reg <= st_status_reg;
        else entry_status_reg <= STATUS_OK;
      end
      for (int k = 0; k < NUM_STAGED; k++) begin
        if (wa_staged_reg && wa_word_reg == 4'(k)) staged_flat_reg[32*k+:32] <= wd_reg;
        if (do_load) staged_flat_reg[32*k+:32] <= load_reg[32*k+:32];
      end
      for (int e = 0; e < NUM_ENTRIES; e++) begin
        if (do_disable && cmd_onehot_reg[e]) ent_enabled[e] <= 1'b0;
        if (do_commit && cmd_onehot_reg[e]) begin
          ent_enabled[e] <= n_en;
          ent_root[e] <= n_root;
          ent_job[e] <= n_job;
          ent_tree[e] <= n_tree;
          ent_fan_in[e] <= n_fan_in;
          ent_mask[e] <= n_mask;
          ent_base[e] <= n_base;
          ent_count[e] <= n_cnt;
          ent_end[e] <= n_end_reg;
          ent_out_child[e] <= staged_reg[7][15:0];
          ent_eth_dst[e] <= {staged_reg[9][15:0], staged_reg[8]};
          ent_eth_src[e] <= {staged_reg[11][15:0], staged_reg[10]};
          ent_ip_src[e] <= staged_reg[12];
          ent_ip_dst[e] <= staged_reg[13];
          ent_udp_src[e] <= staged_reg[14][15:0];
          ent_udp_dst[e] <= staged_reg[14][31:16];
          ent_ttl[e] <= staged_reg[15][7:0];
          ent_dscp[e] <= staged_reg[15][13:8];
        end
      end
    end
  end

  always_comb begin
    rd_hit = 1'b1;
    rd_data = 32'd0;
    if (rd_addr == REG_ENTRY_INDEX) rd_data = entry_index_reg;
    else if (rd_addr == REG_ENTRY_STATUS) rd_data = entry_status_reg;
    else if (rd_addr[13:6] == REG_E_KEY[13:6]) rd_data = staged_reg[rd_addr[5:2]];
    else rd_hit = 1'b0;
  end
endmodule
`default_nettype wire
