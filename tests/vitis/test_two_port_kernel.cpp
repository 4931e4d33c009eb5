// The two-port (bump-in-the-wire) Vitis kernel, Verilated with the real
// engine inside: which frames reach the engine and which pass from cage to
// cage, following UDP_PORT as the host writes it; and the transmit sides as
// AXI4-Stream wants them under back-pressure: random tready on each transmit
// side on its own (seeded), long stalls of one side while the other runs,
// random tvalid gaps on both receive sides. Every clock, every output is
// checked against AXI4-Stream (while tvalid && !tready, tvalid stays high
// and tdata/tkeep/tlast do not change), and the receive sides must take
// every beat (a MAC cannot be held back). Every frame must come out whole,
// at most once and in order per source; a frame that is missing must have
// been dropped whole by the receive frame FIFO of its path, and the drop
// counters (FWD_0TO1_DROPPED, FWD_1TO0_DROPPED, the engine's
// DROP_RX_OVERFLOW and DROP_MAC_ERROR) must equal the frames missing; a
// stalled transmit side must not stop the other; cage 0's transmit side
// alternates between the engine and cage 1 frame by frame when both have
// frames; frames the MAC marks bad (tuser) are dropped on every path; a
// frame cut by a reset never leaves. The engine's expected output comes
// from the HLS C++ model (panama::DefaultEngine) given the same register
// writes and the frames the kernel should hand it.
//
// PANAMA_TEST_SEED sets the seed (printed as the run starts).
#include <Vpanama_two_port_kernel.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "panama/engine/backend.hpp"
#include "panama/regmap.hpp"
#include "panama/wire.hpp"
#include "support/frames.hpp"

using namespace panama;

namespace {

using Frame = std::vector<uint8_t>;

uint32_t test_seed() {
  static const uint32_t seed = [] {
    const char* env = std::getenv("PANAMA_TEST_SEED");
    const uint32_t s = env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 0)) : std::random_device{}();
    std::printf("PANAMA_TEST_SEED=%u\n", s);
    std::fflush(stdout);
    return s;
  }();
  return seed;
}

// Where a frame given to the kernel should leave.
enum class Route { kEngine, kCage1, kCage0 };

struct Beat {
  uint32_t data[16];
  uint64_t keep;
  bool last;
  bool first;
  bool user;  // tuser: the MAC marks the frame bad (on its last beat)
  Route route;
  int idle;  // clocks the receive side stays idle before showing this beat
};

std::vector<Beat> beats_of(const Frame& f, Route route, bool bad = false) {
  std::vector<Beat> out;
  for (size_t off = 0; off < f.size(); off += 64) {
    Beat b{};
    const size_t n = std::min<size_t>(64, f.size() - off);
    for (size_t i = 0; i < n; ++i) b.data[i / 4] |= uint32_t{f[off + i]} << (8 * (i % 4));
    b.keep = n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
    b.last = off + 64 >= f.size();
    b.first = off == 0;
    b.user = bad && b.last;
    b.route = route;
    out.push_back(b);
  }
  return out;
}

// Collects beats of one output into frames; counts bytes from tkeep.
struct Collector {
  std::vector<Frame> frames;
  std::vector<uint64_t> ends;  // clock of each frame's last beat
  Frame cur;
  void beat(const uint32_t* data, uint64_t keep, bool last, uint64_t now) {
    for (int i = 0; i < 64; ++i) {
      if (keep >> i & 1) cur.push_back(static_cast<uint8_t>(data[i / 4] >> (8 * (i % 4))));
    }
    if (last) {
      frames.push_back(cur);
      ends.push_back(now);
      cur.clear();
    }
  }
};

// What one output shows in a clock.
struct OutSample {
  bool valid = false;
  uint32_t data[16] = {};
  uint64_t keep = 0;
  bool last = false;
};

// tready of one transmit side: high with probability `pct` in each clock,
// and low throughout a stall. Stalls are asked for (Tb::stall) or, with
// stall_per_10k > 0, start at random (chance per clock, length in
// [stall_min, stall_max]) while the other side is not stalled.
struct ReadyGen {
  explicit ReadyGen(uint32_t seed) : rng(seed) {}
  std::mt19937 rng;
  int pct = 100;
  int stall_per_10k = 0;
  int stall_min = 0;
  int stall_max = 0;
};

// One stall of a transmit side and what the other side did meanwhile.
struct Stall {
  int port;             // 0: m_axis (cage 0 TX), 1: m_axis_p1 (cage 1 TX)
  uint64_t start, end;  // clocks [start, end)
  uint64_t other_beats_at_start;
  uint64_t other_beats = 0;  // beats the other side sent during the stall
  bool done = false;
};

class Tb {
 public:
  explicit Tb(uint32_t seed)
      : in_rng_(seed * 2654435761u + 1),
        rdy_{ReadyGen(seed * 2654435761u + 2), ReadyGen(seed * 2654435761u + 3)} {
    m_.ap_rst_n = 0;
    idle();
    for (int i = 0; i < 8; ++i) cycle();
    m_.ap_rst_n = 1;
    for (int i = 0; i < 4; ++i) cycle();
  }

  void write(uint32_t addr, uint32_t value) {
    m_.s_axi_control_awaddr = addr;
    m_.s_axi_control_awvalid = 1;
    m_.s_axi_control_wdata = value;
    m_.s_axi_control_wstrb = 0xF;
    m_.s_axi_control_wvalid = 1;
    m_.s_axi_control_bready = 1;
    bool aw = false, w = false, b = false;
    for (int n = 0; !b; ++n) {
      REQUIRE(n < 100000);
      settle();
      const bool aw_now = m_.s_axi_control_awvalid && m_.s_axi_control_awready;
      const bool w_now = m_.s_axi_control_wvalid && m_.s_axi_control_wready;
      b = aw && w && m_.s_axi_control_bvalid;
      edge();
      aw |= aw_now;
      w |= w_now;
      if (aw) m_.s_axi_control_awvalid = 0;
      if (w) m_.s_axi_control_wvalid = 0;
    }
    // The classifier's UDP port, as the kernel follows it.
    if (addr == regmap::kUdpPort) udp_port_ = static_cast<uint16_t>(value);
    if (addr == regmap::kControl && (value & regmap::kControlReset)) udp_port_ = wire::kDefaultUdpPort;
  }

  uint32_t read(uint32_t addr) {
    m_.s_axi_control_araddr = addr;
    m_.s_axi_control_arvalid = 1;
    m_.s_axi_control_rready = 1;
    for (int n = 0;; ++n) {
      REQUIRE(n < 100000);
      settle();
      const bool ar = m_.s_axi_control_arready;
      edge();
      if (ar) break;
    }
    m_.s_axi_control_arvalid = 0;
    for (int n = 0;; ++n) {
      REQUIRE(n < 100000);
      settle();
      const bool r = m_.s_axi_control_rvalid;
      const uint32_t d = m_.s_axi_control_rdata;
      edge();
      if (r) return d;
    }
  }

  // A frame on cage 0's receive side; its route by the engine's own rule
  // (wire::classify_frame) and the UDP port the host last wrote. `bad`: the
  // MAC marks it bad (tuser on its last beat).
  void send0(const Frame& f, bool bad = false) {
    wire::Header h{};
    const bool panama = wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), udp_port_, h) !=
                        wire::FrameClass::kNotPanama;
    queue(0, f, panama ? Route::kEngine : Route::kCage1, bad);
  }
  // A frame on cage 1's receive side (always to cage 0).
  void send1(const Frame& f, bool bad = false) {
    far_.insert(f);
    queue(1, f, Route::kCage0, bad);
  }

  // Runs until receive side `side` has taken `beats` more beats, then holds
  // ap_rst_n low for `clocks` clocks (the receive sides go on sending: the
  // kernel takes and discards their beats), then runs on.
  void reset_after(int side, uint64_t beats, int clocks) {
    const uint64_t target = taken_[side] + beats;
    for (uint64_t n = 0; taken_[side] < target; ++n) {
      REQUIRE(n < 1000000);
      step();
    }
    m_.ap_rst_n = 0;
    for (int i = 0; i < clocks; ++i) step();
    m_.ap_rst_n = 1;
  }

  // Chance (percent) that a receive side with a beat to send leaves tvalid
  // low in a clock, and the most clocks it stays idle before a frame (a
  // random number up to that, per frame sent from now on); tready of the
  // transmit sides.
  void set_gaps(int gap0_pct, int gap1_pct, int frame_gap0 = 0, int frame_gap1 = 0) {
    gap_pct_[0] = gap0_pct;
    gap_pct_[1] = gap1_pct;
    frame_gap_[0] = frame_gap0;
    frame_gap_[1] = frame_gap1;
  }
  ReadyGen& ready(int port) { return rdy_[port]; }
  void set_ready(int pct0, int pct1) {
    rdy_[0].pct = pct0;
    rdy_[1].pct = pct1;
  }

  // tready of transmit side `port` low for the next `clocks` clocks.
  void stall(int port, uint64_t clocks) { start_stall(port, clocks); }

  // Runs until both receive sides are drained, no stall is on and the
  // outputs have been quiet for a while.
  void run() {
    int quiet = 0;
    for (uint64_t n = 0; quiet < 2000; ++n) {
      REQUIRE(n < 5000000);
      step();
      const bool busy = moved_ || !in_[0].empty() || !in_[1].empty() || active_[0] >= 0 || active_[1] >= 0;
      quiet = busy ? 0 : quiet + 1;
    }
  }
  void run(int ready_pct) {
    set_ready(ready_pct, ready_pct);
    run();
  }
  void run_for(uint64_t clocks) {
    for (uint64_t i = 0; i < clocks; ++i) step();
  }

  uint64_t now() const { return now_; }
  uint64_t beats(int port) const { return beats_[port]; }
  // Clocks in which a receive side showed a beat and the kernel did not take it.
  uint64_t refused(int side) const { return refused_[side]; }
  // Clock at which the kernel took the first beat of each frame, per Route,
  // in the order they were sent.
  const std::vector<uint64_t>& starts(Route r) const { return starts_[static_cast<int>(r)]; }
  bool is_far(const Frame& f) const { return far_.count(f) != 0; }
  const std::vector<Stall>& stalls() const { return stalls_; }
  // AXI4-Stream violations seen on the outputs (the first few).
  const std::vector<std::string>& violations() const { return violations_; }
  uint64_t violation_count() const { return violation_count_; }

  Collector out0, out1;  // cage 0 and cage 1 transmit sides

 private:
  void idle() {
    m_.s_axis_tvalid = 0;
    m_.s_axis_p1_tvalid = 0;
    m_.s_axis_tuser = 0;
    m_.s_axis_p1_tuser = 0;
    m_.m_axis_tready = 1;
    m_.m_axis_p1_tready = 1;
    m_.s_axi_control_awvalid = 0;
    m_.s_axi_control_wvalid = 0;
    m_.s_axi_control_arvalid = 0;
    m_.s_axi_control_bready = 1;
    m_.s_axi_control_rready = 1;
  }

  void put(const Beat& b, VlWide<16>& data, QData& keep, CData& last, CData& user) {
    for (int i = 0; i < 16; ++i) data[i] = b.data[i];
    keep = b.keep;
    last = b.last;
    user = b.user;
  }
  // What a receive side shows while tvalid is low: anything.
  void junk(VlWide<16>& data, QData& keep, CData& last) {
    for (int i = 0; i < 16; ++i) data[i] = static_cast<uint32_t>(in_rng_());
    keep = (uint64_t{in_rng_()} << 32) | in_rng_();
    last = in_rng_() & 1;
  }

  void queue(int side, const Frame& f, Route route, bool bad) {
    std::vector<Beat> beats = beats_of(f, route, bad);
    beats.front().idle = std::uniform_int_distribution<int>(0, frame_gap_[side])(in_rng_);
    for (const Beat& b : beats) in_[side].push_back(b);
  }

  void start_stall(int port, uint64_t clocks) {
    finish_stall(port);
    stalls_.push_back(Stall{port, now_, now_ + clocks, beats_[1 - port]});
    active_[port] = static_cast<int>(stalls_.size() - 1);
  }
  void finish_stall(int port) {
    if (active_[port] < 0) return;
    Stall& s = stalls_[static_cast<size_t>(active_[port])];
    s.other_beats = beats_[1 - port] - s.other_beats_at_start;
    s.done = true;
    active_[port] = -1;
  }
  bool stalled(int port) const { return active_[port] >= 0; }

  void drive() {
    std::uniform_int_distribution<int> pct(0, 99);
    // Receive sides: a beat once shown stays until taken (AXI4-Stream).
    for (int i = 0; i < 2; ++i) {
      if (showing_[i] || in_[i].empty()) continue;
      if (in_[i].front().idle > 0) {
        --in_[i].front().idle;
      } else {
        showing_[i] = pct(in_rng_) >= gap_pct_[i];
      }
    }
    m_.s_axis_tvalid = showing_[0];
    m_.s_axis_p1_tvalid = showing_[1];
    if (showing_[0]) {
      put(in_[0].front(), m_.s_axis_tdata, m_.s_axis_tkeep, m_.s_axis_tlast, m_.s_axis_tuser);
    } else {
      junk(m_.s_axis_tdata, m_.s_axis_tkeep, m_.s_axis_tlast);
      m_.s_axis_tuser = in_rng_() & 1;
    }
    if (showing_[1]) {
      put(in_[1].front(), m_.s_axis_p1_tdata, m_.s_axis_p1_tkeep, m_.s_axis_p1_tlast, m_.s_axis_p1_tuser);
    } else {
      junk(m_.s_axis_p1_tdata, m_.s_axis_p1_tkeep, m_.s_axis_p1_tlast);
      m_.s_axis_p1_tuser = in_rng_() & 1;
    }

    // Transmit sides.
    bool ready[2];
    for (int p = 0; p < 2; ++p) {
      ReadyGen& g = rdy_[p];
      if (stalled(p) && now_ >= stalls_[static_cast<size_t>(active_[p])].end) finish_stall(p);
      const bool traffic = !in_[0].empty() || !in_[1].empty();
      if (!stalled(p) && !stalled(1 - p) && g.stall_per_10k > 0 && traffic &&
          std::uniform_int_distribution<int>(0, 9999)(g.rng) < g.stall_per_10k) {
        start_stall(
            p, static_cast<uint64_t>(std::uniform_int_distribution<int>(g.stall_min, g.stall_max)(g.rng)));
      }
      ready[p] = pct(g.rng) < g.pct && !stalled(p);
    }
    m_.m_axis_tready = ready[0];
    m_.m_axis_p1_tready = ready[1];
  }

  OutSample sample(int port) {
    OutSample s;
    if (port == 0) {
      s.valid = m_.m_axis_tvalid;
      std::memcpy(s.data, m_.m_axis_tdata.data(), sizeof s.data);
      s.keep = m_.m_axis_tkeep;
      s.last = m_.m_axis_tlast;
    } else {
      s.valid = m_.m_axis_p1_tvalid;
      std::memcpy(s.data, m_.m_axis_p1_tdata.data(), sizeof s.data);
      s.keep = m_.m_axis_p1_tkeep;
      s.last = m_.m_axis_p1_tlast;
    }
    return s;
  }

  void violation(int port, const char* what) {
    ++violation_count_;
    if (violations_.size() < 8) {
      std::ostringstream os;
      os << (port == 0 ? "m_axis" : "m_axis_p1") << " at clock " << now_ << ": " << what;
      violations_.push_back(os.str());
    }
  }

  // Handshakes of the clock, after the inputs settled and before the edge.
  void monitor() {
    moved_ = false;
    for (int i = 0; i < 2; ++i) {
      const bool shown = i == 0 ? m_.s_axis_tvalid : m_.s_axis_p1_tvalid;
      const bool taken =
          i == 0 ? (m_.s_axis_tvalid && m_.s_axis_tready) : (m_.s_axis_p1_tvalid && m_.s_axis_p1_tready);
      if (shown && !taken) ++refused_[i];
      if (!taken) continue;
      const Beat& b = in_[i].front();
      if (b.first) starts_[static_cast<int>(b.route)].push_back(now_);
      ++taken_[i];
      in_[i].pop_front();
      showing_[i] = false;
      moved_ = true;
    }
    for (int p = 0; p < 2; ++p) {
      const OutSample s = sample(p);
      const bool ready = p == 0 ? m_.m_axis_tready : m_.m_axis_p1_tready;
      // AXI4-Stream: a beat shown stays, unchanged, until taken.
      if (prev_[p].valid && !prev_ready_[p]) {
        if (!s.valid) {
          violation(p, "tvalid dropped before tready");
        } else if (std::memcmp(s.data, prev_[p].data, sizeof s.data) != 0 || s.keep != prev_[p].keep ||
                   s.last != prev_[p].last) {
          violation(p, "tdata/tkeep/tlast changed while tvalid && !tready");
        }
      }
      if (s.valid && ready) {
        ++beats_[p];
        Collector& c = p == 0 ? out0 : out1;
        c.beat(s.data, s.keep, s.last, now_);
        moved_ = true;
      }
      prev_[p] = s;
      prev_ready_[p] = ready;
    }
  }

  void step() {
    drive();
    settle();
    monitor();
    edge();
    ++now_;
  }
  void settle() {
    m_.ap_clk = 0;
    m_.eval();
  }
  void edge() {
    m_.ap_clk = 1;
    m_.eval();
  }
  void cycle() {
    settle();
    edge();
  }

  Vpanama_two_port_kernel m_;
  std::mt19937 in_rng_;
  ReadyGen rdy_[2];
  int gap_pct_[2] = {0, 0};
  int frame_gap_[2] = {0, 0};
  bool showing_[2] = {false, false};
  std::deque<Beat> in_[2];
  uint16_t udp_port_ = wire::kDefaultUdpPort;
  std::set<Frame> far_;
  uint64_t now_ = 0;
  bool moved_ = false;
  uint64_t beats_[2] = {0, 0};
  std::vector<uint64_t> starts_[3];  // per Route: clock the kernel took each frame's first beat
  uint64_t taken_[2] = {0, 0};       // beats taken per receive side
  uint64_t refused_[2] = {0, 0};     // clocks a receive side's beat was not taken
  OutSample prev_[2];
  bool prev_ready_[2] = {true, true};
  std::vector<Stall> stalls_;
  int active_[2] = {-1, -1};
  std::vector<std::string> violations_;
  uint64_t violation_count_ = 0;
};

// The same register writes to the kernel and the model.
void both_write(Tb& tb, EngineBackend& model, uint32_t addr, uint32_t value) {
  tb.write(addr, value);
  model.reg_write(addr, value);
}

void configure(Tb& tb, EngineBackend& model) {
  both_write(tb, model, regmap::kControl, regmap::kControlReset | regmap::kControlEnable);
  both_write(tb, model, regmap::kEKey, 3 | (1u << 16));
  both_write(tb, model, regmap::kEFlags, regmap::kEntryFlagEnable | regmap::kEntryFlagRoot);
  both_write(tb, model, regmap::kEFanIn, 2);
  both_write(tb, model, regmap::kEChildMaskLo, 0x3);
  both_write(tb, model, regmap::kESlotBase, 0);
  both_write(tb, model, regmap::kESlotCount, 4);
  both_write(tb, model, regmap::kEntryIndex, 0);
  both_write(tb, model, regmap::kEntryCmd, regmap::kCmdCommit);
  REQUIRE(tb.read(regmap::kEntryStatus) == regmap::kStatusOk);
}

uint64_t counter(Tb& tb, uint32_t c) {
  const uint32_t a = regmap::global_counter_addr(c);
  return tb.read(a) | uint64_t{tb.read(a + 4)} << 32;
}
uint64_t frames_in(Tb& tb) {
  return counter(tb, regmap::kGcFramesIn);
}

// Which of the frames sent on one path came out: `got` must be `sent` with
// some frames left out (whole frames, in order; frames are unique). Returns
// per sent frame the index of its copy in `got`, or -1; empty with `ok`
// false when `got` is not such a subsequence.
struct Delivery {
  bool ok = true;
  std::vector<long> at;  // per sent frame
  size_t missing = 0;
};
Delivery delivered(const std::vector<Frame>& got, const std::vector<Frame>& sent) {
  Delivery d;
  size_t g = 0;
  for (const Frame& f : sent) {
    if (g < got.size() && got[g] == f) {
      d.at.push_back(static_cast<long>(g++));
    } else {
      d.at.push_back(-1);
      ++d.missing;
    }
  }
  d.ok = g == got.size();
  return d;
}

Frame contribution(uint16_t child, uint32_t seq, uint16_t port, float base, uint16_t n = 20) {
  auto h = test::contribution(3, 1, child, seq, n);
  h.udp_dst = port;
  std::vector<uint32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(test::f2u(base + static_cast<float>(i)));
  return test::make_frame(h, p);
}

Frame other_frame(uint8_t tag, size_t len) {
  Frame f(len, tag);
  f[12] = 0x86;  // EtherType IPv6: never PANAMA
  f[13] = 0xDD;
  return f;
}

// A non-PANAMA frame of `len` bytes (at least 14) that no other frame of
// the test equals: IPv6 with `id` in bytes 14..17 and a pattern after it.
Frame tagged_frame(uint32_t id, size_t len) {
  Frame f(std::max<size_t>(len, 18));
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<uint8_t>(id * 131 + i * 7);
  f[12] = 0x86;
  f[13] = 0xDD;
  std::memcpy(f.data() + 14, &id, 4);
  return f;
}

// The model's output for `frames` given to the engine in this order.
std::vector<Frame> model_out(EngineBackend& model, const std::vector<Frame>& frames) {
  std::vector<Frame> out;
  EmitFn collect([&](const uint8_t* d, uint32_t n) { out.emplace_back(d, d + n); });
  for (const Frame& f : frames) model.process_frame(f.data(), static_cast<uint32_t>(f.size()), collect);
  return out;
}

// Cage 0's transmit side split by source; `unknown` counts frames that are
// neither (interleaved or corrupted).
struct Cage0Split {
  std::vector<Frame> far, engine;
  std::vector<bool> is_far;  // per frame, in order
  size_t unknown = 0;
};
Cage0Split split_cage0(const Tb& tb, const std::vector<Frame>& engine_expected) {
  std::set<Frame> engine_set(engine_expected.begin(), engine_expected.end());
  Cage0Split s;
  for (const Frame& f : tb.out0.frames) {
    const bool far = tb.is_far(f);
    if (far) {
      s.far.push_back(f);
    } else if (engine_set.count(f)) {
      s.engine.push_back(f);
    } else {
      ++s.unknown;
    }
    s.is_far.push_back(far);
  }
  return s;
}

// "" when `got` equals `want`, else where they first differ (frames are
// bytes: Catch would print them as text).
std::string frames_diff(const std::vector<Frame>& got, const std::vector<Frame>& want) {
  if (got == want) return "";
  std::ostringstream os;
  os << got.size() << " frames, expected " << want.size();
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (got[i] != want[i]) {
      os << "; frame " << i << " differs (" << got[i].size() << " bytes, expected " << want[i].size() << ")";
      break;
    }
  }
  return os.str();
}

void check_protocol(const Tb& tb) {
  for (const std::string& v : tb.violations()) UNSCOPED_INFO(v);
  CHECK(tb.violation_count() == 0);
}

}  // namespace

TEST_CASE("two-port kernel: PANAMA frames to the engine, the rest from cage to cage", "[vitis][two_port]") {
  const uint32_t seed = test_seed();
  INFO("PANAMA_TEST_SEED=" << seed);
  Tb tb(seed);
  auto model = make_engine_backend("model");
  configure(tb, *model);
  const int ready = GENERATE(100, 40);
  INFO("transmit tready " << ready << "%");

  // Cage 0: two contributions (one slot completes), a non-PANAMA frame, a
  // UDP frame to another port; cage 1: frames of several lengths.
  const Frame c0 = contribution(0, 0, wire::kDefaultUdpPort, 1.0f);
  const Frame c1 = contribution(1, 0, wire::kDefaultUdpPort, 100.0f);
  const Frame dns = contribution(0, 1, 53, 5.0f);
  const Frame v6 = other_frame(0x11, 150);
  const std::vector<Frame> expect_engine_out = model_out(*model, {c0, c1});
  REQUIRE(expect_engine_out.size() == 1);  // the aggregate
  tb.send0(c0);
  tb.send0(dns);
  tb.send0(v6);
  tb.send0(c1);
  const std::vector<Frame> far = {other_frame(0x21, 60), other_frame(0x22, 64), other_frame(0x23, 65),
                                  other_frame(0x24, 1500), contribution(1, 2, wire::kDefaultUdpPort, 7.0f)};
  for (const Frame& f : far) tb.send1(f);
  tb.run(ready);

  check_protocol(tb);
  // Cage 1 gets cage 0's non-PANAMA frames, in order, untouched.
  CHECK(frames_diff(tb.out1.frames, {dns, v6}) == "");
  // Cage 0 gets cage 1's frames (PANAMA or not: untouched) and the
  // aggregate, each whole; cage 1's keep their order.
  const Cage0Split s = split_cage0(tb, expect_engine_out);
  CHECK(s.unknown == 0);
  CHECK(frames_diff(s.far, far) == "");
  CHECK(frames_diff(s.engine, expect_engine_out) == "");
  CHECK(tb.out0.cur.empty());
  CHECK(tb.out1.cur.empty());
  CHECK(frames_in(tb) == 2);  // the engine saw the two contributions only
}

TEST_CASE("two-port kernel: the classifier follows UDP_PORT and CONTROL.RESET", "[vitis][two_port]") {
  Tb tb(test_seed());
  auto model = make_engine_backend("model");
  configure(tb, *model);
  const Frame to9600 = contribution(0, 0, 9600, 1.0f);
  const Frame to9700 = contribution(0, 0, 9700, 1.0f);

  tb.write(regmap::kUdpPort, 9700);
  tb.send0(to9600);  // no longer PANAMA: to cage 1
  tb.send0(to9700);  // PANAMA now: to the engine (waits for its sibling)
  tb.run(100);
  CHECK(frames_diff(tb.out1.frames, {to9600}) == "");
  CHECK(tb.out0.frames.empty());
  CHECK(frames_in(tb) == 1);

  // RESET restores UDP_PORT to 9600, in the engine and in the classifier.
  tb.write(regmap::kControl, regmap::kControlReset | regmap::kControlEnable);
  CHECK(tb.read(regmap::kUdpPort) == 9600);
  tb.send0(to9700);
  tb.send0(to9600);
  tb.run(100);
  CHECK(frames_diff(tb.out1.frames, {to9600, to9700}) == "");
  CHECK(frames_in(tb) == 1);  // counters were reset; the 9600 frame reached the engine

  // A frame too short to hold a UDP header, and an IPv4 frame with options,
  // are not PANAMA: to cage 1.
  Frame runt(30, 0);
  runt[12] = 0x08;
  Frame options = to9600;
  options[14] = 0x46;
  tb.send0(runt);
  tb.send0(options);
  tb.run(100);
  CHECK(tb.out1.frames.size() == 4);
  CHECK(frames_diff({tb.out1.frames[2]}, {runt}) == "");
  CHECK(frames_diff({tb.out1.frames[3]}, {options}) == "");
  check_protocol(tb);
}

TEST_CASE("two-port kernel: random back-pressure on each transmit side, gaps on each receive side",
          "[vitis][two_port]") {
  const int round = GENERATE(range(0, 4));
  const uint32_t seed = test_seed() + static_cast<uint32_t>(round) * 7919u;
  INFO("PANAMA_TEST_SEED=" << test_seed() << " round " << round << " (seed " << seed << ")");
  std::mt19937 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  Tb tb(seed);
  auto model = make_engine_backend("model");
  configure(tb, *model);
  tb.set_gaps(uni(0, 60), uni(0, 60), uni(0, 1) * uni(0, 100), uni(0, 1) * uni(0, 100));
  tb.set_ready(uni(20, 100), uni(20, 100));
  for (int p = 0; p < 2; ++p) {
    tb.ready(p).stall_per_10k = 8;
    tb.ready(p).stall_min = 300;
    tb.ready(p).stall_max = 4000;
  }
  INFO("tready m_axis " << tb.ready(0).pct << "%, m_axis_p1 " << tb.ready(1).pct << "%");
  std::printf("two-port random round %d: seed %u, tready m_axis %d%%, m_axis_p1 %d%%\n", round, seed,
              tb.ready(0).pct, tb.ready(1).pct);

  // Cage 0: contribution pairs (each completes a slot) among frames for
  // cage 1 (IPv6, UDP to another port, IPv4 with options, runts); cage 1:
  // frames of every length, PANAMA ones among them (they pass untouched).
  std::vector<Frame> to_engine, to_cage1, far;
  uint32_t id = 0;
  auto cage1_frame = [&]() {
    const uint32_t k = id++;
    const int kind = uni(0, 3);
    if (kind == 0) return contribution(0, k, 53, static_cast<float>(k));
    if (kind == 1) {
      Frame f = contribution(1, k, wire::kDefaultUdpPort, static_cast<float>(k));
      f[14] = 0x46;  // IPv4 options: not PANAMA
      return f;
    }
    return tagged_frame(k, static_cast<size_t>(uni(14, 1514)));
  };
  const int pairs = 80;
  std::vector<Frame> cage0_order;
  for (uint32_t seq = 0; seq < pairs; ++seq) {
    const uint16_t n = static_cast<uint16_t>(uni(1, 100));
    for (uint16_t child = 0; child < 2; ++child) {
      while (uni(0, 2) != 0) {
        to_cage1.push_back(cage1_frame());
        cage0_order.push_back(to_cage1.back());
      }
      to_engine.push_back(
          contribution(child, seq, wire::kDefaultUdpPort, static_cast<float>(seq * 10 + child), n));
      cage0_order.push_back(to_engine.back());
    }
  }
  for (int i = 0; i < 200; ++i) {
    const uint32_t k = id++;
    far.push_back(uni(0, 4) == 0 ? contribution(static_cast<uint16_t>(i & 1), k, wire::kDefaultUdpPort, 1.0f)
                                 : tagged_frame(k, static_cast<size_t>(uni(14, 1514))));
  }
  const std::vector<Frame> expect_engine_out = model_out(*model, to_engine);
  REQUIRE(expect_engine_out.size() == static_cast<size_t>(pairs));

  for (const Frame& f : cage0_order) tb.send0(f);
  for (const Frame& f : far) tb.send1(f);
  tb.run();

  // (1) AXI4-Stream on both transmit sides, every clock; every beat taken
  // on both receive sides.
  check_protocol(tb);
  CHECK(tb.refused(0) == 0);
  CHECK(tb.refused(1) == 0);
  // (2) Whole frames only: every frame out of cage 0 is one frame of cage 1
  // or one of the engine's, never a mix.
  const Cage0Split s = split_cage0(tb, expect_engine_out);
  CHECK(s.unknown == 0);
  CHECK(tb.out0.cur.empty());
  CHECK(tb.out1.cur.empty());
  // (3) Every frame at most once, in order per source; what is missing was
  // dropped whole by its path's frame FIFO (a stall longer than it holds)
  // and counted. The engine's own FIFO (1024 beats, and 512 in its input
  // stage) holds all the contributions: nothing of the engine's is lost.
  const Delivery d01 = delivered(tb.out1.frames, to_cage1);
  const Delivery d10 = delivered(s.far, far);
  CHECK(d01.ok);
  CHECK(d10.ok);
  CHECK(counter(tb, regmap::kGcFwd0to1Dropped) == d01.missing);
  CHECK(counter(tb, regmap::kGcFwd1to0Dropped) == d10.missing);
  CHECK(frames_diff(s.engine, expect_engine_out) == "");
  CHECK(frames_in(tb) == static_cast<uint64_t>(to_engine.size()));
  CHECK(counter(tb, regmap::kGcDropRxOverflow) == 0);
  std::printf(
      "two-port random round %d: frames dropped for room: %zu of %zu cage 0 to 1, %zu of %zu cage 1 to 0\n",
      round, d01.missing, to_cage1.size(), d10.missing, far.size());

  // (4) While one transmit side was stalled, the other kept sending the
  // frames it had: those for it that entered the kernel before the stall
  // and left at or after its start (cage 0's for cage 1; cage 1's for
  // cage 0). Frames that were dropped do not count.
  auto other_had_traffic = [&](const Stall& st) {
    const bool to_cage1 = st.port == 0;  // the other side is cage 1's transmit side
    const Delivery& d = to_cage1 ? d01 : d10;
    const std::vector<uint64_t>& start = tb.starts(to_cage1 ? Route::kCage1 : Route::kCage0);
    const Collector& out = to_cage1 ? tb.out1 : tb.out0;
    for (size_t i = 0; i < d.at.size() && i < start.size(); ++i) {
      if (d.at[i] < 0 || start[i] >= st.start) continue;
      // Its copy's position among the frames out of that side.
      size_t k = static_cast<size_t>(d.at[i]);
      if (!to_cage1) {  // index among cage 0's frames from cage 1: find it among all of cage 0's
        size_t seen = 0;
        for (size_t j = 0; j < s.is_far.size(); ++j) {
          if (!s.is_far[j]) continue;
          if (seen++ == k) {
            k = j;
            break;
          }
        }
      }
      if (out.ends[k] >= st.start) return true;
    }
    return false;
  };
  int measured = 0;
  for (const Stall& st : tb.stalls()) {
    if (!st.done || !other_had_traffic(st)) continue;
    ++measured;
    INFO((st.port == 0 ? "m_axis" : "m_axis_p1") << " stalled for clocks [" << st.start << ", " << st.end
                                                 << "): the other side sent " << st.other_beats << " beats");
    CHECK(st.other_beats > 0);
  }
  std::printf("two-port random round %d: %zu long stalls, %d with traffic for the other side; %llu clocks\n",
              round, tb.stalls().size(), measured, static_cast<unsigned long long>(tb.now()));
}

TEST_CASE("two-port kernel: a stalled transmit side does not hold the other back", "[vitis][two_port]") {
  const int stalled = GENERATE(0, 1);  // 0: cage 0 TX (m_axis), 1: cage 1 TX (m_axis_p1)
  const uint32_t seed = test_seed();
  INFO("PANAMA_TEST_SEED=" << seed << ", stalled " << (stalled == 0 ? "m_axis" : "m_axis_p1"));
  Tb tb(seed);
  auto model = make_engine_backend("model");
  configure(tb, *model);
  tb.set_gaps(10, 10);
  tb.set_ready(70, 70);

  // Cage 0: each contribution behind a frame for cage 1 (140 beats in all,
  // within cage 0's pass FIFO); cage 1: frames for cage 0.
  const int pairs = 10;
  std::vector<Frame> to_engine, to_cage1, far;
  for (uint32_t seq = 0; seq < pairs; ++seq) {
    for (uint16_t child = 0; child < 2; ++child) {
      to_cage1.push_back(tagged_frame(seq * 2 + child, 400));
      tb.send0(to_cage1.back());
      to_engine.push_back(contribution(child, seq, wire::kDefaultUdpPort, static_cast<float>(seq)));
      tb.send0(to_engine.back());
    }
    far.push_back(tagged_frame(1000 + seq, 300));
    tb.send1(far.back());
  }
  const std::vector<Frame> expect_engine_out = model_out(*model, to_engine);
  REQUIRE(expect_engine_out.size() == static_cast<size_t>(pairs));

  const uint64_t clocks = 20000;
  tb.stall(stalled, clocks);
  tb.run_for(clocks);
  const uint64_t free_beats = tb.beats(1 - stalled);
  const uint64_t stalled_beats = tb.beats(stalled);
  const Cage0Split during = split_cage0(tb, expect_engine_out);
  std::printf(
      "two-port: %s stalled %llu clocks: %s sent %llu beats meanwhile (%zu frames of cage 1, %zu of the "
      "engine, "
      "%zu of cage 0)\n",
      stalled == 0 ? "m_axis (cage 0 TX)" : "m_axis_p1 (cage 1 TX)", static_cast<unsigned long long>(clocks),
      stalled == 0 ? "m_axis_p1" : "m_axis", static_cast<unsigned long long>(free_beats), during.far.size(),
      during.engine.size(), tb.out1.frames.size());
  CHECK(stalled_beats == 0);
  CHECK(free_beats > 0);
  if (stalled == 1) {
    // Cage 1's frames and every aggregate: the contributions behind cage 0's
    // frames for cage 1 still reached the engine.
    CHECK(frames_diff(during.far, far) == "");
    CHECK(frames_diff(during.engine, expect_engine_out) == "");
  } else {
    // All of cage 0's frames for cage 1, the contributions waiting in the
    // engine meanwhile.
    CHECK(frames_diff(tb.out1.frames, to_cage1) == "");
  }

  tb.run();
  check_protocol(tb);
  const Cage0Split s = split_cage0(tb, expect_engine_out);
  CHECK(s.unknown == 0);
  CHECK(frames_diff(tb.out1.frames, to_cage1) == "");
  CHECK(frames_diff(s.far, far) == "");
  CHECK(frames_diff(s.engine, expect_engine_out) == "");
}

TEST_CASE("two-port kernel: cage 0's transmit side alternates between the engine and cage 1",
          "[vitis][two_port]") {
  const uint32_t seed = test_seed();
  INFO("PANAMA_TEST_SEED=" << seed);
  std::mt19937 rng(seed);
  Tb tb(seed);
  auto model = make_engine_backend("model");
  configure(tb, *model);

  // Both sources saturated: cage 1 sends long frames back to back (more
  // than its frame FIFO holds while cage 0's transmit side is stalled: the
  // rest is dropped whole and counted); the engine's aggregates (3 beats,
  // two contributions each) pile up meanwhile and keep coming faster than
  // one per cage 1 frame afterwards.
  const int pairs = 20, far_frames = 40;
  std::vector<Frame> to_engine, far;
  for (uint32_t seq = 0; seq < pairs; ++seq) {
    for (uint16_t child = 0; child < 2; ++child) {
      to_engine.push_back(contribution(child, seq, wire::kDefaultUdpPort, static_cast<float>(seq)));
      tb.send0(to_engine.back());
    }
  }
  for (uint32_t i = 0; i < far_frames; ++i) {
    far.push_back(tagged_frame(i, 1500));
    tb.send1(far.back());
  }
  const std::vector<Frame> expect_engine_out = model_out(*model, to_engine);
  REQUIRE(expect_engine_out.size() == static_cast<size_t>(pairs));

  const int ready = std::uniform_int_distribution<int>(30, 100)(rng);
  INFO("m_axis tready " << ready << "% after the stall");
  tb.set_ready(ready, 100);
  tb.stall(0, 3000);
  tb.run();

  check_protocol(tb);
  CHECK(tb.refused(1) == 0);
  const Cage0Split s = split_cage0(tb, expect_engine_out);
  REQUIRE(s.unknown == 0);
  const Delivery d = delivered(s.far, far);
  CHECK(d.ok);
  CHECK(d.missing > 0);  // 960 beats against a 512-beat FIFO during the stall
  CHECK(counter(tb, regmap::kGcFwd1to0Dropped) == d.missing);
  CHECK(frames_diff(s.engine, expect_engine_out) == "");
  const int far_out = static_cast<int>(s.far.size());
  std::printf("two-port: cage 1 frames dropped for room during the stall: %zu of %d\n", d.missing,
              far_frames);
  // (5) Grants in turn: while both have frames left, neither source is more
  // than one frame ahead of the other.
  int e = 0, f = 0, max_lead = 0;
  for (const bool is_far : s.is_far) {
    if (e >= pairs || f >= far_out) break;
    (is_far ? f : e) += 1;
    max_lead = std::max(max_lead, std::abs(e - f));
  }
  std::printf("two-port: both sources saturated: the engine and cage 1 at most %d frame(s) apart\n",
              max_lead);
  CHECK(max_lead <= 1);
}

TEST_CASE(
    "two-port kernel: receive sides are never held back; full or bad frames are dropped whole and counted",
    "[vitis][two_port]") {
  const uint32_t seed = test_seed();
  INFO("PANAMA_TEST_SEED=" << seed);
  std::mt19937 rng(seed);
  Tb tb(seed);
  auto model = make_engine_backend("model");
  configure(tb, *model);
  tb.set_gaps(0, 0);
  tb.set_ready(100, 100);

  // Cage 1's transmit side stalls while cage 0 sends 40 frames of 24 beats
  // for it (960 beats against the 512-beat FIFO 0->1) among contribution
  // pairs for the engine, whose aggregates leave through cage 0 meanwhile.
  // Some frames carry the MAC's bad-frame flag: three for cage 1, two of
  // cage 1's own frames, one contribution.
  std::vector<Frame> to_engine, to_cage1, far;
  std::vector<bool> bad01, bad10;
  std::set<size_t> bad_for_cage1 = {2, 17, 33};
  for (uint32_t i = 0; i < 40; ++i) {
    to_cage1.push_back(tagged_frame(i, 1500));
    bad01.push_back(bad_for_cage1.count(i) != 0);
    tb.send0(to_cage1.back(), bad01.back());
    if (i % 4 == 0) {
      const uint32_t seq = i / 4;
      for (uint16_t child = 0; child < 2; ++child) {
        to_engine.push_back(
            contribution(child, seq, wire::kDefaultUdpPort, static_cast<float>(seq * 3 + child)));
        tb.send0(to_engine.back());
      }
    }
  }
  const Frame bad_contribution = contribution(0, 40, wire::kDefaultUdpPort, 5.0f);
  tb.send0(bad_contribution, true);
  for (uint32_t i = 0; i < 30; ++i) {
    far.push_back(
        tagged_frame(1000 + i, static_cast<size_t>(std::uniform_int_distribution<int>(60, 300)(rng))));
    bad10.push_back(i == 4 || i == 21);
    tb.send1(far.back(), bad10.back());
  }
  std::vector<Frame> expect_engine_out = model_out(*model, to_engine);
  {
    EmitFn none([](const uint8_t*, uint32_t) { FAIL("the model sent a bad frame's aggregate"); });
    model->process_frame(bad_contribution.data(), static_cast<uint32_t>(bad_contribution.size()), none, true);
  }
  REQUIRE(expect_engine_out.size() == to_engine.size() / 2);

  tb.stall(1, 6000);
  tb.run();

  check_protocol(tb);
  CHECK(tb.refused(0) == 0);
  CHECK(tb.refused(1) == 0);
  const Cage0Split s = split_cage0(tb, expect_engine_out);
  CHECK(s.unknown == 0);
  CHECK(frames_diff(s.engine, expect_engine_out) == "");
  const Delivery d01 = delivered(tb.out1.frames, to_cage1);
  const Delivery d10 = delivered(s.far, far);
  REQUIRE(d01.ok);
  REQUIRE(d10.ok);
  for (size_t i = 0; i < to_cage1.size(); ++i) {
    if (bad01[i]) CHECK(d01.at[i] < 0);  // a bad frame never leaves
  }
  for (size_t i = 0; i < far.size(); ++i) CHECK((d10.at[i] < 0) == bad10[i]);  // no room lacked on 1 to 0
  std::printf(
      "two-port: cage 1 stalled: %zu of %zu frames for cage 1 dropped (3 marked bad), %zu of %zu of "
      "cage 1's (2 marked bad)\n",
      d01.missing, to_cage1.size(), d10.missing, far.size());
  CHECK(d01.missing > bad_for_cage1.size());  // some for room too
  CHECK(counter(tb, regmap::kGcFwd0to1Dropped) == d01.missing);
  CHECK(counter(tb, regmap::kGcFwd1to0Dropped) == d10.missing);
  // The engine: every contribution counted, the bad one as a MAC error.
  CHECK(frames_in(tb) == to_engine.size() + 1);
  CHECK(counter(tb, regmap::kGcDropMacError) == 1);
  CHECK(counter(tb, regmap::kGcDropRxOverflow) == 0);
  CHECK(counter(tb, regmap::kGcAggregated) == to_engine.size());
}

TEST_CASE("two-port kernel: a frame cut by a reset never leaves", "[vitis][two_port]") {
  const uint32_t seed = test_seed();
  INFO("PANAMA_TEST_SEED=" << seed);
  Tb tb(seed);
  tb.set_gaps(0, 0);
  tb.set_ready(100, 100);
  // On each receive side a 32-beat frame, cut by a reset after its 10th
  // beat (the sides go on sending during and after the reset), then a short
  // frame. Only the short frames come out.
  const Frame a0 = tagged_frame(1, 2048), b0 = tagged_frame(2, 200);
  const Frame a1 = tagged_frame(3, 2048), b1 = tagged_frame(4, 200);
  tb.send0(a0);
  tb.send0(b0);
  tb.send1(a1);
  tb.send1(b1);
  tb.reset_after(1, 10, 4);
  tb.run();
  check_protocol(tb);
  CHECK(frames_diff(tb.out1.frames, {b0}) == "");
  CHECK(frames_diff(tb.out0.frames, {b1}) == "");
  CHECK(tb.out0.cur.empty());
  CHECK(tb.out1.cur.empty());
}
