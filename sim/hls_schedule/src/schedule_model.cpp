// The HLS kernel's schedule model (schedule_model.hpp).
#include "panama/hls_schedule/schedule_model.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <utility>

#include "panama/engine_sizes.hpp"
#include "panama/regmap.hpp"
#include "panama/table_entry.hpp"
#include "panama/wire.hpp"

namespace panama::hls_schedule {

namespace {

// The card's configuration, as the Vitis top instantiates it.
constexpr uint32_t kEntries = kEngineTableEntries;
constexpr uint32_t kSlots = kEnginePacketSlots;
constexpr uint32_t kSlotWords = kEngineSlotWords;
using Rules = kernel::Rules<kEntries, kSlots, kSlotWords>;

// ------------------------------------------------------------- patterns
//
// The frames of sim/cosim/src/cosim.cpp's line_rate_scenario (entries,
// order, headers), copied: the model must not link the Verilated RTL.

using Frame = std::vector<uint8_t>;

wire::Header base_header(uint16_t job, uint8_t tree, uint16_t child, uint32_t seq, uint16_t elems,
                         uint16_t port, std::mt19937_64& rng) {
  wire::Header h{};
  for (int i = 0; i < 6; ++i) {
    h.eth_dst[i] = static_cast<uint8_t>(rng());
    h.eth_src[i] = static_cast<uint8_t>(rng());
  }
  h.dscp = static_cast<uint8_t>(rng() & 0x3F);
  const uint32_t e = rng() % 8;
  h.ecn = e == 0 ? wire::kEcnCe : (e == 1 ? wire::kEcnNotEct : (e == 2 ? wire::kEcnEct1 : wire::kEcnEct0));
  h.ttl = static_cast<uint8_t>(rng());
  h.ip_id = static_cast<uint16_t>(rng());
  h.ip_src = static_cast<uint32_t>(rng());
  h.ip_dst = static_cast<uint32_t>(rng());
  h.udp_src = static_cast<uint16_t>(rng());
  h.udp_dst = port;
  h.version = wire::kVersion;
  h.type = static_cast<uint8_t>(wire::PacketType::kAggregateUp);
  h.job_id = job;
  h.tree_id = tree;
  h.elem_type = static_cast<uint8_t>(wire::ElemType::kFloat32);
  h.child_id = child;
  h.seq = seq;
  h.cwnd_cap = static_cast<uint16_t>(rng() % 4 == 0 ? 0xFFFF : rng() % 40);
  h.elem_count = elems;
  return h;
}

Frame make_frame(const wire::Header& h, std::mt19937_64& rng) {
  std::vector<uint32_t> payload(h.elem_count);
  for (auto& p : payload) p = static_cast<uint32_t>(rng());  // values do not change the schedule
  Frame f(wire::frame_length(h.elem_count));
  const uint32_t n = wire::build_frame(f.data(), static_cast<uint32_t>(f.size()), h, payload.data());
  f.resize(n);
  return f;
}

struct Scenario {
  std::vector<std::pair<uint32_t, uint32_t>> setup;  // register writes
  std::vector<Frame> frames;
};

Scenario line_rate_scenario(const Pattern& p) {
  std::mt19937_64 rng(p.frame_bytes * 7919ull + p.jobs);
  Scenario sc;
  sc.setup.push_back({regmap::kControl, regmap::kControlReset | regmap::kControlEnable});
  const uint32_t fan_in = std::clamp<uint32_t>(p.fan_in, 1, 64);
  const uint32_t share = kSlots / p.jobs;
  for (uint32_t j = 0; j < p.jobs; ++j) {
    TableEntry t;
    for (uint32_t c = 0; c < fan_in; ++c) t.child_mask |= uint64_t{1} << c;
    t.job = static_cast<uint16_t>(j);
    t.tree = 0;
    t.enable = true;
    t.root = false;
    t.fan_in = fan_in;
    t.slot_base = j * share;
    t.slot_count = share;
    t.out_child_id = static_cast<uint16_t>(rng());
    entry_commit_writes(j, t, [&sc](uint32_t a, uint32_t v) { sc.setup.push_back({a, v}); });
  }
  const uint16_t elems = static_cast<uint16_t>((p.frame_bytes - wire::kPayloadOffset) / 4);
  uint32_t seq = 0;
  while (sc.frames.size() < p.frames) {
    for (uint32_t i = 0; i < p.jobs * fan_in && sc.frames.size() < p.frames; ++i) {
      const uint32_t j = p.same_slot_runs ? i / fan_in : i % p.jobs;
      const uint32_t c = p.same_slot_runs ? i % fan_in : i / p.jobs;
      const wire::Header h = base_header(static_cast<uint16_t>(j), 0, static_cast<uint16_t>(c), seq, elems,
                                         wire::kDefaultUdpPort, rng);
      Frame f = make_frame(h, rng);
      if (p.passthrough) {
        f.assign(p.frame_bytes, 0x5A);
        wire::store_be16(f.data() + wire::kEthType, 0x86DD);  // IPv6: not PANAMA
      }
      sc.frames.push_back(std::move(f));
    }
    ++seq;
  }
  return sc;
}

// ------------------------------------------------------------- the work

// What one frame makes the processes do: the kernel's own decision and
// commands for it (RuleTable::front, SlotTable::decide_meta through
// EngineRules, kernel::frame_commands).
struct FrameWork {
  uint32_t beats;   // on the input stream
  uint32_t stored;  // in the frame FIFO
  kernel::SlotCmd sc;
  bool sends;  // egress gets `ec`
  kernel::EmitCmd ec;
};

std::vector<FrameWork> frame_work(const Scenario& sc) {
  auto rules = std::make_unique<Rules>();
  for (const auto& w : sc.setup) rules->reg_write(w.first, w.second);
  if (rules->reg_read(regmap::kEntryStatus) != regmap::kStatusOk) {
    throw std::logic_error("schedule model: a pattern's entry was refused");
  }
  std::vector<FrameWork> work;
  work.reserve(sc.frames.size());
  for (const Frame& f : sc.frames) {
    const uint32_t len = static_cast<uint32_t>(f.size());
    FrameWork fw{};
    fw.beats = frame_beats(len);
    fw.stored = std::min(fw.beats, kernel::kMaxFrameBeats);
    const uint32_t desc_len = fw.beats > kernel::kMaxFrameBeats ? kernel::kOversizeLen : len;
    wire::Header h{};
    const wire::FrameClass cls =
        desc_len <= wire::kMaxFrameBytes
            ? wire::classify_frame(f.data(), desc_len, rules->udp_port(), h, Rules::kElemTypes)
            : wire::FrameClass::kNotPanama;
    FrameDecision fd = FrameDecision();
    rules->decide(cls, h, desc_len, false, fd);
    fw.sends = kernel::frame_commands<kSlotWords>(fd, desc_len, fw.stored, fw.sc, fw.ec);
    work.push_back(fw);
  }
  return work;
}

// ------------------------------------------------------------- the clock

// A FIFO of `depth` entries. An entry written in a clock is readable from
// the next; an entry read in a clock gives its room back at the end of it.
struct Fifo {
  FifoStats stats;
  std::deque<std::pair<uint64_t, uint32_t>> q;  // (readable from, frame index)
  uint32_t freed = 0;

  Fifo(const char* name, uint32_t depth) {
    stats.name = name;
    stats.depth = depth;
  }
  uint32_t held() const { return static_cast<uint32_t>(q.size()) + freed; }
  bool room() const { return held() < stats.depth; }
  bool ready(uint64_t now) const { return !q.empty() && q.front().first <= now; }
  uint32_t front() const { return q.front().second; }
  void push(uint64_t ready_at, uint32_t v) {
    q.emplace_back(ready_at, v);
    stats.max_occupancy = std::max(stats.max_occupancy, held());
  }
  uint32_t pop() {
    const uint32_t v = q.front().second;
    q.pop_front();
    ++freed;
    return v;
  }
  void end_clock() { freed = 0; }
};

// A pipelined process: an initiation every `ii` clocks at most (an empty one
// when its inputs are not there), its FIFO writes `depth` clocks after the
// initiation. A write that finds its FIFO full stalls the whole pipeline
// for the clock (HLS's blocking write in a pipeline): the writes in flight
// move a clock later and no initiation starts.
struct Process {
  struct Write {
    Fifo* fifo;
    uint32_t item;
  };
  struct InFlight {
    uint64_t at;
    std::vector<Write> writes;
  };
  uint32_t ii;
  uint32_t depth;
  uint64_t next_issue = 0;
  std::deque<InFlight> flight;

  Process(uint32_t ii_, uint32_t depth_) : ii(std::max(1u, ii_)), depth(std::max(1u, depth_)) {}

  // The writes due now; false when the pipeline stalls this clock.
  bool retire(uint64_t now) {
    while (!flight.empty() && flight.front().at <= now) {
      InFlight& f = flight.front();
      for (const Write& w : f.writes) {
        if (!w.fifo->room()) {
          ++w.fifo->stats.full_waits;
          for (InFlight& x : flight) ++x.at;
          next_issue = std::max(next_issue, now + 1);
          return false;
        }
      }
      for (const Write& w : f.writes) w.fifo->push(now + 1, w.item);
      flight.pop_front();
    }
    return true;
  }
  // Whether an initiation starts now (after retire() returned true).
  bool initiate(uint64_t now) {
    if (now < next_issue) return false;
    next_issue = now + ii;
    return true;
  }
  void write(uint64_t now, std::vector<Write> writes) {
    if (!writes.empty()) flight.push_back({now + depth, std::move(writes)});
  }
  bool idle() const { return flight.empty(); }
};

}  // namespace

std::vector<Pattern> line_rate_patterns() {
  std::vector<Pattern> p;
  // panama_cosim --bench (and test_cosim_kernel): 8 jobs x 4 children, the
  // contributions to a slot back to back.
  for (uint32_t bytes : {68u, 128u, 256u, 512u, 1024u, 1500u, 4096u, 9000u}) {
    p.push_back({std::to_string(bytes) + " B, 8 jobs x 4, same-slot runs", bytes, 8, 4, true,
                 bytes >= 4096 ? 192u : 800u});
  }
  // test_cosim's line-rate cases and the benchmark's interleaved sizes:
  // consecutive frames to different slots.
  for (uint32_t bytes : {68u, 128u, 132u, 256u, 1500u, 9000u}) {
    p.push_back({std::to_string(bytes) + " B, 8 jobs x 4, interleaved", bytes, 8, 4, false,
                 bytes >= 4096 ? 192u : 800u});
  }
  // test_cosim's one-slot case and the benchmark's: one job of fan-in 64,
  // every frame adds into the same slot words (n / max(n, D) with D = 2).
  for (uint32_t bytes : {68u, 128u, 196u, 256u, 512u}) {
    p.push_back({std::to_string(bytes) + " B, 1 job x 64, one slot", bytes, 1, 64, true, 64u * 70u});
  }
  return p;
}

Result simulate(const Pattern& pattern, const Params& prm) {
  const std::vector<FrameWork> work = frame_work(line_rate_scenario(pattern));

  // The channels carry frame indices: what each token or beat belongs to.
  Fifo frame("frame", prm.frame_fifo);
  Fifo desc("desc", prm.desc_fifo);
  Fifo ctrl("ctrl", prm.ctrl_fifo);
  Fifo slot_cmd("slot_cmd", prm.slot_cmd_fifo);
  Fifo emit_cmd("emit_cmd", prm.emit_cmd_fifo);
  Fifo count("count", prm.count_fifo);
  Fifo beats("beats", prm.beat_fifo);
  Fifo* const fifos[] = {&frame, &desc, &ctrl, &slot_cmd, &emit_cmd, &count, &beats};

  Process ingress(prm.ingress_ii, prm.ingress_depth);
  Process classify(prm.classify_ii, prm.classify_depth);
  Process slot_state(prm.slot_state_ii, prm.slot_state_depth);
  Process counters(prm.counters_ii, prm.counters_depth);
  Process accumulate(prm.accumulate_ii, prm.accumulate_depth);
  Process egress(prm.egress_ii, prm.egress_depth);

  Result r;
  r.frames = work.size();
  uint64_t total_beats = 0;
  for (const FrameWork& w : work) total_beats += w.beats;

  // Ingress: the next input beat.
  uint32_t in_frame = 0, in_beat = 0;
  bool first = true;
  // Accumulate.
  bool acc_active = false, acc_reemit = false;
  uint32_t acc_frame = 0, acc_b = 0, acc_w = 0;
  uint64_t beat_iter = 0;                   // initiations that handled a beat (the write queue's clock)
  std::map<uint64_t, uint64_t> last_write;  // (array, word) -> beat_iter of its last write
  // Egress.
  bool eg_active = false;
  uint32_t eg_frame = 0, eg_b = 0;
  uint64_t last_out = 0;

  const uint64_t limit = 64 * total_beats + 100000;
  // A slot-memory access by the accumulate stage's current beat.
  auto access = [&](uint32_t array, uint32_t word, bool read, bool write) {
    const uint64_t key = (uint64_t{array} << 32) | word;
    if (read) {
      const auto it = last_write.find(key);
      if (it != last_write.end()) {
        const uint64_t d = beat_iter - it->second;
        if (d < prm.add_loop) ++r.loop_violations;
        if (d <= prm.slot_fwd_depth) ++r.forwarded_reads;
      }
    }
    if (write) last_write[key] = beat_iter;
  };

  uint64_t now = 0;
  for (;; ++now) {
    if (now > limit) throw std::runtime_error("schedule model: no progress (deadlock) in " + pattern.name);
    const bool input_left = in_frame < work.size();
    bool empty = true;
    for (const Fifo* f : fifos) empty = empty && f->q.empty();
    if (!input_left && !acc_active && !eg_active && empty && ingress.idle() && classify.idle() &&
        slot_state.idle() && counters.idle() && accumulate.idle() && egress.idle()) {
      break;
    }

    // Consumers first: what they read in a clock is room at its end.
    // Egress: one output beat per initiation (m_axis never pushes back).
    if (egress.retire(now) && egress.initiate(now)) {
      if (!eg_active && emit_cmd.ready(now)) {
        eg_frame = emit_cmd.pop();
        eg_active = true;
        eg_b = 0;
      }
      if (eg_active) {
        const kernel::EmitCmd& ec = work[eg_frame].ec;
        bool out = false;
        if (ec.emit && eg_b < kernel::kHeaderBeats) {
          out = true;
        } else if (beats.ready(now)) {
          beats.pop();
          out = true;
        }
        if (out) {
          ++r.out_beats;
          last_out = now + egress.depth;
          if (++eg_b == ec.beats) {
            eg_active = false;
            ++r.emitted;
          }
        }
      }
    }

    // Accumulate: one beat per initiation.
    if (accumulate.retire(now) && accumulate.initiate(now)) {
      if (!acc_active && slot_cmd.ready(now)) {
        acc_frame = slot_cmd.pop();
        acc_active = true;
        acc_reemit = false;
        acc_b = 0;
        acc_w = 0;
      }
      if (acc_active) {
        const kernel::SlotCmd& c = work[acc_frame].sc;
        if (!acc_reemit) {
          if (frame.ready(now)) {
            frame.pop();
            const bool payload_op = c.op == SlotOp::kLoad || c.op == SlotOp::kAdd;
            const bool in_payload =
                payload_op && acc_b >= kernel::kHeaderBeats && acc_b < kernel::kHeaderBeats + c.payload_beats;
            if (in_payload) {
              const uint32_t p = acc_b - kernel::kHeaderBeats;
              const bool add = c.op == SlotOp::kAdd;
              if (c.half) {
                access(0, c.base + p, add, true);
                access(1, c.base + p, add, true);
              } else {
                access(p & 1u, c.base + p / 2, add, true);
              }
            }
            if (c.op == SlotOp::kPass || (in_payload && c.emit)) accumulate.write(now, {{&beats, acc_frame}});
            ++beat_iter;
            if (++acc_b == c.frame_beats) {
              acc_reemit = c.op == SlotOp::kReemit;
              acc_active = acc_reemit;
            }
          }
        } else {
          if (c.half) {
            access(0, c.base + acc_w, true, false);
            access(1, c.base + acc_w, true, false);
          } else {
            access(acc_w & 1u, c.base + acc_w / 2, true, false);
          }
          accumulate.write(now, {{&beats, acc_frame}});
          ++beat_iter;
          if (++acc_w == c.payload_beats) acc_active = false;
        }
      }
    }

    // Counters: one token per initiation.
    if (counters.retire(now) && counters.initiate(now) && count.ready(now)) count.pop();

    // Slot state: one frame per initiation; a slot command, a counter token
    // and, for a frame that leaves, an emit command.
    if (slot_state.retire(now) && slot_state.initiate(now) && ctrl.ready(now)) {
      const uint32_t f = ctrl.pop();
      std::vector<Process::Write> w{{&slot_cmd, f}, {&count, f}};
      if (work[f].sends) w.push_back({&emit_cmd, f});
      slot_state.write(now, std::move(w));
    }

    // Classify: one frame per initiation.
    if (classify.retire(now) && classify.initiate(now) && desc.ready(now)) {
      const uint32_t f = desc.pop();
      classify.write(now, {{&ctrl, f}});
    }

    // Ingress: the input offers its next beat every clock.
    const bool running = ingress.retire(now);
    if (input_left) {
      ++r.offered_cycles;
      if (running && ingress.initiate(now)) {
        const FrameWork& w = work[in_frame];
        const bool last = in_beat + 1 == w.beats;
        std::vector<Process::Write> writes;
        if (in_beat < kernel::kMaxFrameBeats) writes.push_back({&frame, in_frame});
        if (last) writes.push_back({&desc, in_frame});
        ingress.write(now, std::move(writes));
        if (first) r.first_accept = now;
        first = false;
        r.last_accept = now;
        ++r.in_beats;
        if (last) {
          ++in_frame;
          in_beat = 0;
        } else {
          ++in_beat;
        }
      } else {
        ++r.stall_cycles;
      }
    } else if (running) {
      ingress.initiate(now);
    }

    for (Fifo* f : fifos) f->end_clock();
  }
  r.end = std::max(now, last_out);
  for (const Fifo* f : fifos) r.fifos.push_back(f->stats);
  return r;
}

}  // namespace panama::hls_schedule
