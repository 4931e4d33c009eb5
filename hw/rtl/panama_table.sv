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
// the control pipeline is empty and `ready` is high (two clocks after the
// last write), so a frame never sees half a command and a commit sees the
// checks of the state it applies to.
// Read ports are combinational (latency 0); the lookup gives the lowest
// enabled entry whose key matches.
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

    // Lookup by key.
    input  wire logic                        [15:0]  lookup_job,
    input  wire logic                        [7:0]   lookup_tree,
    output logic                                     lookup_hit,
    output logic                  [ENTRY_BITS-1:0]   lookup_entry,

    // Read ports of the divider input, the decision and the header builder.
    input  wire logic             [ENTRY_BITS-1:0]   share_idx,
    output logic                             [15:0]  share_count,
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
  end

  logic [31:0] entry_index_reg;
  logic [31:0] entry_status_reg;
  logic [31:0] staged_reg[NUM_STAGED];

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

  assign share_count = ent_count[share_idx][15:0];
  always_comb begin
    decide_entry.enabled = ent_enabled[decide_idx];
    decide_entry.root = ent_root[decide_idx];
    decide_entry.job = ent_job[decide_idx];
    decide_entry.tree = ent_tree[decide_idx];
    decide_entry.fan_in = ent_fan_in[decide_idx];
    decide_entry.mask = ent_mask[decide_idx];
    decide_entry.base = ent_base[decide_idx];
    decide_entry.count = ent_count[decide_idx];
    decide_entry.out_child = ent_out_child[decide_idx];
    decide_entry.eth_dst = ent_eth_dst[decide_idx];
    decide_entry.eth_src = ent_eth_src[decide_idx];
    decide_entry.ip_src = ent_ip_src[decide_idx];
    decide_entry.ip_dst = ent_ip_dst[decide_idx];
    decide_entry.udp_src = ent_udp_src[decide_idx];
    decide_entry.udp_dst = ent_udp_dst[decide_idx];
    decide_entry.ttl = ent_ttl[decide_idx];
    decide_entry.dscp = ent_dscp[decide_idx];
    header_entry.enabled = ent_enabled[header_idx];
    header_entry.root = ent_root[header_idx];
    header_entry.job = ent_job[header_idx];
    header_entry.tree = ent_tree[header_idx];
    header_entry.fan_in = ent_fan_in[header_idx];
    header_entry.mask = ent_mask[header_idx];
    header_entry.base = ent_base[header_idx];
    header_entry.count = ent_count[header_idx];
    header_entry.out_child = ent_out_child[header_idx];
    header_entry.eth_dst = ent_eth_dst[header_idx];
    header_entry.eth_src = ent_eth_src[header_idx];
    header_entry.ip_src = ent_ip_src[header_idx];
    header_entry.ip_dst = ent_ip_dst[header_idx];
    header_entry.udp_src = ent_udp_src[header_idx];
    header_entry.udp_dst = ent_udp_dst[header_idx];
    header_entry.ttl = ent_ttl[header_idx];
    header_entry.dscp = ent_dscp[header_idx];
  end

  // Enabled keys are unique (a commit that would duplicate one fails), so
  // the matching index is the OR of the matches: no priority chain.
  always_comb begin
    lookup_hit = 1'b0;
    lookup_entry = '0;
    for (int i = 0; i < NUM_ENTRIES; i++) begin
      if (ent_enabled[i] && ent_job[i] == lookup_job && ent_tree[i] == lookup_tree) begin
        lookup_hit = 1'b1;
        lookup_entry = lookup_entry | ENTRY_BITS'(i);
      end
    end
  end

  // The staged entry, decoded (engine.hpp decode_staged), and its checks.
  // The checks run over two registered stages (per-entry overlap and key
  // matches, then the first match), so no path crosses all entries at once;
  // `ready` holds register writes off until they have settled after the
  // last change (table state changes only on a write or a reset).
  logic        n_en, n_root;
  logic [15:0] n_job;
  logic [7:0]  n_tree, n_fan_in;
  logic [63:0] n_mask;
  logic [31:0] n_base, n_cnt;
  logic [6:0]  mask_ones;
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

  // Stage 1: the child-mask population count, the range, and per entry:
  // overlaps the staged range / has the staged key (enabled others only).
  logic                   bad_fan_in_reg, bad_range_reg;
  logic [6:0]             mask_ones_reg;
  logic [7:0]             n_fan_in_reg;
  logic [NUM_ENTRIES-1:0] overlap_reg, same_key_reg;
  logic [31:0]            n_end_reg;  // one past the staged range
  always_comb begin
    mask_ones = 7'd0;
    for (int i = 0; i < 64; i++) mask_ones = mask_ones + {6'd0, n_mask[i]};
  end
  always_ff @(posedge clk) begin
    mask_ones_reg <= mask_ones;
    n_fan_in_reg <= n_fan_in;
    bad_range_reg <= n_cnt == 32'd0 || n_cnt > 32'hFFFF || n_base >= 32'(NUM_SLOTS) ||
        n_cnt > 32'(NUM_SLOTS) - n_base;
    n_end_reg <= n_base + n_cnt;
    for (int i = 0; i < NUM_ENTRIES; i++) begin
      overlap_reg[i] <= 32'(i) != entry_index_reg && ent_enabled[i] && n_base < ent_base[i] + ent_count[i] &&
          ent_base[i] < n_base + n_cnt;
      same_key_reg[i] <= 32'(i) != entry_index_reg && ent_enabled[i] && ent_job[i] == n_job &&
          ent_tree[i] == n_tree;
    end
  end
  assign bad_fan_in_reg = n_fan_in_reg == 8'd0 || n_fan_in_reg > 8'(MAX_FAN_IN) ||
      {1'b0, n_fan_in_reg} > {2'b0, mask_ones_reg};

  // Stage 2: the status in the model's order; among entries, the first one
  // that overlaps or has the key decides (overlap first within an entry).
  logic [NUM_ENTRIES-1:0] conflict, first_conflict;
  logic [31:0]            st_status, st_status_reg;
  always_comb begin
    conflict = overlap_reg | same_key_reg;
    first_conflict = conflict & (~conflict + NUM_ENTRIES'(1));  // lowest set bit
    st_status = STATUS_OK;
    if (bad_fan_in_reg) st_status = STATUS_BAD_FAN_IN;
    else if (bad_range_reg) st_status = STATUS_BAD_SLOT_RANGE;
    else if (conflict != '0)
      st_status = (first_conflict & overlap_reg) != '0 ? STATUS_SLOT_OVERLAP : STATUS_DUPLICATE_KEY;
  end
  always_ff @(posedge clk) st_status_reg <= st_status;

  // Clocks until st_status_reg reflects the current state.
  logic [1:0] settle_reg;
  always_ff @(posedge clk) begin
    if (rst || clear_all || wr_valid) settle_reg <= 2'd2;
    else if (settle_reg != 2'd0) settle_reg <= settle_reg - 2'd1;
  end
  assign ready = settle_reg == 2'd0;

  logic is_cmd, cmd_known, index_ok, do_commit, do_load, do_disable;
  always_comb begin
    is_cmd = wr_valid && wr_addr == REG_ENTRY_CMD;
    cmd_known = wr_data == CMD_COMMIT || wr_data == CMD_LOAD || wr_data == CMD_DISABLE;
    index_ok = entry_index_reg < 32'(NUM_ENTRIES);
    do_commit = is_cmd && cmd_known && index_ok && wr_data == CMD_COMMIT && st_status_reg == STATUS_OK;
    do_load = is_cmd && cmd_known && index_ok && wr_data == CMD_LOAD;
    do_disable = is_cmd && cmd_known && index_ok && wr_data == CMD_DISABLE;
  end
  assign commit_valid = do_commit;
  assign commit_entry = cmd_entry;
  assign commit_base = n_base;
  assign commit_end = n_end_reg;

  always_ff @(posedge clk) begin
    if (rst || clear_all) begin
      entry_index_reg <= 32'd0;
      entry_status_reg <= STATUS_OK;
      for (int i = 0; i < NUM_STAGED; i++) staged_reg[i] <= 32'd0;
      for (int e = 0; e < NUM_ENTRIES; e++) begin
        ent_enabled[e] <= 1'b0;
        ent_root[e] <= 1'b0;
        ent_job[e] <= 16'd0;
        ent_tree[e] <= 8'd0;
        ent_fan_in[e] <= 8'd0;
        ent_mask[e] <= 64'd0;
        ent_base[e] <= 32'd0;
        ent_count[e] <= 32'd0;
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
    end else if (wr_valid) begin
      if (wr_addr == REG_ENTRY_INDEX) entry_index_reg <= wr_data;
      if (is_cmd) begin
        if (!cmd_known) entry_status_reg <= STATUS_BAD_COMMAND;
        else if (!index_ok) entry_status_reg <= STATUS_BAD_INDEX;
        else if (wr_data == CMD_COMMIT) entry_status_reg <= st_status_reg;
        else entry_status_reg <= STATUS_OK;
      end
      if (wr_addr >= REG_E_KEY && wr_addr <= REG_E_IP_TTL_DSCP) staged_reg[4'((wr_addr - REG_E_KEY) >> 2)] <= wr_data;
      if (do_disable) ent_enabled[cmd_entry] <= 1'b0;
      if (do_commit) begin
        ent_enabled[cmd_entry] <= n_en;
        ent_root[cmd_entry] <= n_root;
        ent_job[cmd_entry] <= n_job;
        ent_tree[cmd_entry] <= n_tree;
        ent_fan_in[cmd_entry] <= n_fan_in;
        ent_mask[cmd_entry] <= n_mask;
        ent_base[cmd_entry] <= n_base;
        ent_count[cmd_entry] <= n_cnt;
        ent_out_child[cmd_entry] <= staged_reg[7][15:0];
        ent_eth_dst[cmd_entry] <= {staged_reg[9][15:0], staged_reg[8]};
        ent_eth_src[cmd_entry] <= {staged_reg[11][15:0], staged_reg[10]};
        ent_ip_src[cmd_entry] <= staged_reg[12];
        ent_ip_dst[cmd_entry] <= staged_reg[13];
        ent_udp_src[cmd_entry] <= staged_reg[14][15:0];
        ent_udp_dst[cmd_entry] <= staged_reg[14][31:16];
        ent_ttl[cmd_entry] <= staged_reg[15][7:0];
        ent_dscp[cmd_entry] <= staged_reg[15][13:8];
      end
      if (do_load) begin
        staged_reg[0] <= {8'd0, ent_tree[cmd_entry], ent_job[cmd_entry]};
        staged_reg[1] <= {30'd0, ent_root[cmd_entry], ent_enabled[cmd_entry]};
        staged_reg[2] <= {24'd0, ent_fan_in[cmd_entry]};
        staged_reg[3] <= ent_mask[cmd_entry][31:0];
        staged_reg[4] <= ent_mask[cmd_entry][63:32];
        staged_reg[5] <= ent_base[cmd_entry];
        staged_reg[6] <= ent_count[cmd_entry];
        staged_reg[7] <= {16'd0, ent_out_child[cmd_entry]};
        staged_reg[8] <= ent_eth_dst[cmd_entry][31:0];
        staged_reg[9] <= {16'd0, ent_eth_dst[cmd_entry][47:32]};
        staged_reg[10] <= ent_eth_src[cmd_entry][31:0];
        staged_reg[11] <= {16'd0, ent_eth_src[cmd_entry][47:32]};
        staged_reg[12] <= ent_ip_src[cmd_entry];
        staged_reg[13] <= ent_ip_dst[cmd_entry];
        staged_reg[14] <= {ent_udp_dst[cmd_entry], ent_udp_src[cmd_entry]};
        staged_reg[15] <= {18'd0, ent_dscp[cmd_entry], ent_ttl[cmd_entry]};
      end
    end
  end

  always_comb begin
    rd_hit = 1'b1;
    rd_data = 32'd0;
    if (rd_addr == REG_ENTRY_INDEX) rd_data = entry_index_reg;
    else if (rd_addr == REG_ENTRY_STATUS) rd_data = entry_status_reg;
    else if (rd_addr >= REG_E_KEY && rd_addr <= REG_E_IP_TTL_DSCP) rd_data = staged_reg[4'((rd_addr - REG_E_KEY) >> 2)];
    else rd_hit = 1'b0;
  end
endmodule
`default_nettype wire
