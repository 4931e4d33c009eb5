// RtlEngine: drives the Verilated panama_engine through its AXI4-Stream and
// AXI4-Lite ports, one clock at a time (see rtl_engine.hpp).
#include "panama/cosim/rtl_engine.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <stdexcept>

#include "Vpanama_engine.h"
#include "verilated.h"
#if PANAMA_RTL_TRACE
#include "verilated_vcd_c.h"
#endif

namespace panama::cosim {

namespace {
constexpr uint32_t kBeatBytes = 64;
constexpr uint32_t kAxilAddrMask = (1u << regmap::kAddressBits) - 1;
// Beats of room in the receive FIFO a waiting source asks for beyond its
// frame's: status_rx_free is registered and the beats of the frame before
// are still on their way in (the input register and the write stage).
constexpr uint32_t kRoomMargin = 4;
}  // namespace

struct RtlEngine::Impl {
  VerilatedContext ctx;
  std::unique_ptr<Vpanama_engine> top;
#if PANAMA_RTL_TRACE
  std::unique_ptr<VerilatedVcdC> vcd;
#endif
  uint64_t cycle = 0;
  uint64_t hang_limit = 2000000;
  uint32_t rx_capacity = 0;  // receive FIFO beats (status_rx_free when empty)
  CycleStats stats;
  StreamShaping shaping;
  std::mt19937_64 rng{1};
  std::uniform_real_distribution<double> unit{0.0, 1.0};

  explicit Impl(const std::string& vcd_path) : top(new Vpanama_engine(&ctx, "panama_engine")) {
#if PANAMA_RTL_TRACE
    if (!vcd_path.empty()) {
      ctx.traceEverOn(true);
      vcd.reset(new VerilatedVcdC);
      top->trace(vcd.get(), 99);
      vcd->open(vcd_path.c_str());
    }
#else
    if (!vcd_path.empty()) {
      throw std::runtime_error("RtlEngine: waveforms need a build with -DPANAMA_RTL_TRACE=ON");
    }
#endif
    idle_inputs();
    top->rst = 1;
    for (int i = 0; i < 4; ++i) {
      low();
      high();
    }
    top->rst = 0;
    low();
    rx_capacity = top->status_rx_free;
  }

  ~Impl() {
    top->final();
#if PANAMA_RTL_TRACE
    if (vcd) vcd->close();
#endif
  }

  void idle_inputs() {
    top->s_axis_tvalid = 0;
    top->s_axis_tlast = 0;
    top->s_axis_tkeep = 0;
    top->s_axis_tuser = 0;
    top->m_axis_tready = 1;
    top->s_axil_awvalid = 0;
    top->s_axil_wvalid = 0;
    top->s_axil_bready = 1;
    top->s_axil_arvalid = 0;
    top->s_axil_rready = 1;
    top->s_axil_wstrb = 0xF;
    top->fwd_drop = 0;
  }

  // Clock low: inputs set by the caller settle; outputs can be sampled.
  void low() {
    top->clk = 0;
    top->eval();
#if PANAMA_RTL_TRACE
    if (vcd) vcd->dump(2 * cycle);
#endif
  }
  // Rising edge: the handshakes sampled in low() take place.
  void high() {
    top->clk = 1;
    top->eval();
#if PANAMA_RTL_TRACE
    if (vcd) vcd->dump(2 * cycle + 1);
#endif
    ++cycle;
  }

  void check_hang(uint64_t since, const char* what) const {
    if (cycle - since > hang_limit) {
      throw std::runtime_error(std::string("RtlEngine: no progress for ") + std::to_string(hang_limit) +
                               " clocks while " + what + " (cycle " + std::to_string(cycle) + ")");
    }
  }

  uint32_t reg_read(uint32_t addr) {
    const uint64_t start = cycle;
    top->s_axil_araddr = addr & kAxilAddrMask;
    top->s_axil_arvalid = 1;
    top->s_axil_rready = 1;
    for (;;) {
      low();
      const bool ar = top->s_axil_arready;
      high();
      if (ar) break;
      check_hang(start, "waiting for AXI4-Lite arready");
    }
    top->s_axil_arvalid = 0;
    for (;;) {
      low();
      const bool r = top->s_axil_rvalid;
      const uint32_t data = top->s_axil_rdata;
      high();
      if (r) return data;
      check_hang(start, "waiting for AXI4-Lite rvalid");
    }
  }

  void reg_write(uint32_t addr, uint32_t value) {
    const uint64_t start = cycle;
    top->s_axil_awaddr = addr & kAxilAddrMask;
    top->s_axil_awvalid = 1;
    top->s_axil_wdata = value;
    top->s_axil_wvalid = 1;
    top->s_axil_bready = 1;
    for (;;) {
      low();
      const bool aw = top->s_axil_awready && top->s_axil_wready;
      high();
      if (aw) break;
      check_hang(start, "waiting for AXI4-Lite awready/wready");
    }
    top->s_axil_awvalid = 0;
    top->s_axil_wvalid = 0;
    for (;;) {
      low();
      const bool b = top->s_axil_bvalid;
      high();
      if (b) return;
      check_hang(start, "waiting for AXI4-Lite bvalid");
    }
  }

  std::vector<EngineOutcome> run(const std::vector<std::vector<uint8_t>>& frames, EmitTarget& target,
                                 const std::vector<uint8_t>& mac_errors, bool mac_source) {
    for (const auto& f : frames) {
      if (f.empty())
        throw std::invalid_argument("RtlEngine: a frame of 0 bytes cannot be sent on AXI4-Stream");
    }
    if (!mac_errors.empty() && mac_errors.size() != frames.size())
      throw std::invalid_argument("RtlEngine: one MAC error flag per frame, or none");
    auto beats_of = [&](size_t i) {
      return static_cast<uint32_t>((frames[i].size() + kBeatBytes - 1) / kBeatBytes);
    };
    uint32_t mac_beat = 0;  // beat of the current frame that carries tuser[0]
    auto pick_mac_beat = [&](size_t i) {
      if (mac_errors.empty() || !mac_errors[i]) return;
      mac_beat = static_cast<uint32_t>(rng() % beats_of(i));
    };
    if (!frames.empty()) pick_mac_beat(0);
    // One outcome per frame, filled as the receive FIFO's verdicts (in frame
    // order) and the engine's decisions (in the order of the frames the FIFO
    // kept) come in.
    std::vector<EngineOutcome> outcomes(frames.size());
    std::vector<uint64_t> in_start(frames.size(), 0);
    size_t verdicts = 0, decided = 0;
    std::deque<size_t> kept;  // frames the FIFO kept, awaiting their decision
    size_t frame = 0;
    uint32_t beat = 0;
    bool presenting = false;
    std::deque<uint64_t> out_pending;
    std::vector<uint8_t> out;
    bool out_in_frame = false;
    uint64_t last_progress = cycle;

    for (;;) {
      // Drive the input: a beat once offered is taken (the engine takes
      // every beat); the next is offered unless a gap is drawn. Before a
      // frame's first beat a source that can wait waits until the receive
      // FIFO has room for the frame (the whole FIFO for a longer frame).
      const bool have = frame < frames.size();
      if (have && !presenting) {
        presenting = !(shaping.in_gap_probability > 0.0 && unit(rng) < shaping.in_gap_probability);
      }
      bool waiting = false;
      if (have && presenting && beat == 0 && !mac_source) {
        const uint32_t need = std::min(beats_of(frame) + kRoomMargin, rx_capacity);
        waiting = top->status_rx_free < need;
      }
      const bool send = have && presenting && !waiting;
      if (send) {
        const auto& f = frames[frame];
        const uint32_t off = beat * kBeatBytes;
        const uint32_t n = std::min<uint32_t>(kBeatBytes, static_cast<uint32_t>(f.size()) - off);
        uint8_t bytes[kBeatBytes] = {};
        std::memcpy(bytes, f.data() + off, n);
        for (uint32_t w = 0; w < kBeatBytes / 4; ++w) {
          top->s_axis_tdata[w] = static_cast<uint32_t>(bytes[4 * w]) |
                                 (static_cast<uint32_t>(bytes[4 * w + 1]) << 8) |
                                 (static_cast<uint32_t>(bytes[4 * w + 2]) << 16) |
                                 (static_cast<uint32_t>(bytes[4 * w + 3]) << 24);
        }
        top->s_axis_tkeep = n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
        top->s_axis_tlast = off + n >= f.size();
        top->s_axis_tuser = !mac_errors.empty() && mac_errors[frame] && beat == mac_beat;
        top->s_axis_tvalid = 1;
      } else {
        top->s_axis_tvalid = 0;
        top->s_axis_tlast = 0;
        top->s_axis_tuser = 0;
      }
      top->m_axis_tready =
          !(shaping.out_stall_probability > 0.0 && unit(rng) < shaping.out_stall_probability);

      low();
      if (send && !top->s_axis_tready) throw std::runtime_error("RtlEngine: s_axis_tready low (it never is)");
      const bool out_hs = top->m_axis_tvalid && top->m_axis_tready;
      const bool idle = top->status_idle;
      if (have && presenting) {
        ++stats.in_offered_cycles;
        if (waiting) ++stats.in_stall_cycles;
      }
      if (top->status_in_stall) {
        ++stats.engine_stall_cycles;
        if (top->status_stall_in_fifo) {
          ++stats.stall_in_fifo;
        } else if (top->status_stall_desc_fifo) {
          ++stats.stall_desc_fifo;
        } else {
          ++stats.stall_other;
        }
      }
      if (top->m_axis_tvalid && !top->m_axis_tready) ++stats.out_backpressure_cycles;
      if (out_hs) {
        const uint64_t keep = top->m_axis_tkeep;
        if (!out_in_frame) {
          out_in_frame = true;
          out.clear();
          if (out_pending.empty()) throw std::runtime_error("RtlEngine: output frame without a decision");
          stats.latencies.push_back(static_cast<uint32_t>(cycle - out_pending.front()));
          out_pending.pop_front();
        }
        for (uint32_t k = 0; k < kBeatBytes; ++k) {
          if ((keep >> k) & 1u)
            out.push_back(static_cast<uint8_t>(top->m_axis_tdata[k / 4] >> (8 * (k % 4))));
        }
        ++stats.out_beats;
      }
      const bool out_last = out_hs && top->m_axis_tlast;
      const bool verdict = top->status_rx_frame;
      const bool drop_overflow = top->status_rx_drop_overflow;
      const bool drop_bad = top->status_rx_drop_bad;
      const bool decision = top->status_decision_valid;
      EngineOutcome oc{};
      if (decision) {
        oc.action = static_cast<EngineAction>(top->status_decision_action);
        oc.drop_counter = top->status_decision_counter;
        oc.entry = top->status_decision_entry == 0xFF ? -1 : static_cast<int32_t>(top->status_decision_entry);
      }
      if (send && beat == 0) in_start[frame] = cycle;
      high();
      ++stats.cycles;

      if (send) {
        ++stats.in_beats;
        ++beat;
        if (beat * kBeatBytes >= frames[frame].size()) {
          ++frame;
          ++stats.frames_in;
          beat = 0;
          if (frame < frames.size()) pick_mac_beat(frame);
        }
        presenting = false;
      }
      if (verdict) {
        if (verdicts >= frame)
          throw std::runtime_error("RtlEngine: receive FIFO verdict without an input frame");
        const size_t i = verdicts++;
        if (drop_overflow || drop_bad) {
          const uint32_t c = drop_bad ? regmap::kGcDropMacError : regmap::kGcDropRxOverflow;
          outcomes[i] = EngineOutcome{EngineAction::kDropped, c, -1};
          ++decided;
          ++(drop_bad ? stats.rx_drop_bad : stats.rx_drop_overflow);
        } else {
          kept.push_back(i);
        }
      }
      if (decision) {
        if (kept.empty()) throw std::runtime_error("RtlEngine: decision without an input frame");
        const size_t i = kept.front();
        kept.pop_front();
        if (oc.action == EngineAction::kPassed || oc.action == EngineAction::kEmitted ||
            oc.action == EngineAction::kReemitted) {
          out_pending.push_back(in_start[i]);
        }
        outcomes[i] = oc;
        ++decided;
      }
      if (out_last) {
        out_in_frame = false;
        ++stats.frames_out;
        target.emit(out.data(), static_cast<uint32_t>(out.size()), Ports{});
      }
      if (send || out_hs || decision || verdict) last_progress = cycle;
      if (frame == frames.size() && decided == frames.size() && idle && !out_in_frame) break;
      check_hang(last_progress, "streaming frames");
    }
    top->s_axis_tvalid = 0;
    top->m_axis_tready = 1;
    return outcomes;
  }
};

RtlEngine::RtlEngine(const std::string& vcd_path) : impl_(new Impl(vcd_path)) {}
RtlEngine::~RtlEngine() = default;

uint32_t RtlEngine::reg_read(uint32_t addr) {
  return impl_->reg_read(addr);
}
void RtlEngine::reg_write(uint32_t addr, uint32_t value) {
  impl_->reg_write(addr, value);
}

EngineOutcome RtlEngine::process_frame(const uint8_t* frame, uint32_t len, EmitTarget& out, bool mac_error) {
  if (len == 0) {
    // An empty frame cannot exist on AXI4-Stream; count it as the model would.
    throw std::invalid_argument("RtlEngine: a frame of 0 bytes cannot be sent on AXI4-Stream");
  }
  const std::vector<std::vector<uint8_t>> one{std::vector<uint8_t>(frame, frame + len)};
  return impl_->run(one, out, mac_error ? std::vector<uint8_t>{1} : std::vector<uint8_t>{}, false).at(0);
}

std::vector<EngineOutcome> RtlEngine::run(const std::vector<std::vector<uint8_t>>& frames, EmitTarget& out,
                                          const std::vector<uint8_t>& mac_errors) {
  return impl_->run(frames, out, mac_errors, impl_->shaping.mac_source);
}

void RtlEngine::set_shaping(const StreamShaping& s) {
  impl_->shaping = s;
  impl_->rng.seed(s.seed);
}
const CycleStats& RtlEngine::stats() const {
  return impl_->stats;
}
void RtlEngine::reset_stats() {
  impl_->stats = CycleStats{};
}
uint64_t RtlEngine::cycle() const {
  return impl_->cycle;
}
void RtlEngine::set_hang_limit(uint64_t cycles) {
  impl_->hang_limit = cycles;
}

}  // namespace panama::cosim
