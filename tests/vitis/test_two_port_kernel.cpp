// The two-port (bump-in-the-wire) Vitis kernel, Verilated with the real
// engine inside: which frames reach the engine and which pass from cage to
// cage, following UDP_PORT as the host writes it; whole frames on cage 0's
// transmit side when the engine's output and cage 1's frames compete; and
// random back-pressure on both transmit sides. The engine's expected output
// comes from the HLS C++ model (panama::DefaultEngine) given the same
// register writes and the frames the kernel should hand it.
#include <Vpanama_two_port_kernel.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "panama/engine/backend.hpp"
#include "panama/regmap.hpp"
#include "panama/wire.hpp"
#include "support/frames.hpp"

using namespace panama;

namespace {

using Frame = std::vector<uint8_t>;

struct Beat {
  uint32_t data[16];
  uint64_t keep;
  bool last;
};

std::vector<Beat> beats_of(const Frame& f) {
  std::vector<Beat> out;
  for (size_t off = 0; off < f.size(); off += 64) {
    Beat b{};
    const size_t n = std::min<size_t>(64, f.size() - off);
    for (size_t i = 0; i < n; ++i) b.data[i / 4] |= uint32_t{f[off + i]} << (8 * (i % 4));
    b.keep = n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
    b.last = off + 64 >= f.size();
    out.push_back(b);
  }
  return out;
}

// Collects beats of one output into frames; counts bytes from tkeep.
struct Collector {
  std::vector<Frame> frames;
  Frame cur;
  void beat(const uint32_t* data, uint64_t keep, bool last) {
    for (int i = 0; i < 64; ++i) {
      if (keep >> i & 1) cur.push_back(static_cast<uint8_t>(data[i / 4] >> (8 * (i % 4))));
    }
    if (last) {
      frames.push_back(cur);
      cur.clear();
    }
  }
};

class Tb {
 public:
  explicit Tb(uint32_t seed) : rng_(seed) {
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

  void send0(const Frame& f) {
    for (const Beat& b : beats_of(f)) in0_.push_back(b);
  }
  void send1(const Frame& f) {
    for (const Beat& b : beats_of(f)) in1_.push_back(b);
  }

  // Runs until both inputs are drained and the outputs have been quiet for
  // a while. `ready_pct`: chance of tready on each transmit side per clock.
  void run(int ready_pct) {
    int quiet = 0;
    for (int n = 0; quiet < 2000; ++n) {
      REQUIRE(n < 2000000);
      const bool busy = !in0_.empty() || !in1_.empty();
      drive(ready_pct);
      settle();
      bool moved = busy;
      if (m_.s_axis_tvalid && m_.s_axis_tready) in0_.pop_front();
      if (m_.s_axis_p1_tvalid && m_.s_axis_p1_tready) in1_.pop_front();
      if (m_.m_axis_tvalid && m_.m_axis_tready) {
        out0.beat(m_.m_axis_tdata.data(), m_.m_axis_tkeep, m_.m_axis_tlast);
        moved = true;
      }
      if (m_.m_axis_p1_tvalid && m_.m_axis_p1_tready) {
        out1.beat(m_.m_axis_p1_tdata.data(), m_.m_axis_p1_tkeep, m_.m_axis_p1_tlast);
        moved = true;
      }
      edge();
      quiet = moved ? 0 : quiet + 1;
    }
    idle();
  }

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
  void put(const Beat& b, VlWide<16>& data, QData& keep, CData& last) {
    for (int i = 0; i < 16; ++i) data[i] = b.data[i];
    keep = b.keep;
    last = b.last;
  }
  void drive(int ready_pct) {
    std::uniform_int_distribution<int> pct(0, 99);
    m_.s_axis_tvalid = !in0_.empty();
    if (!in0_.empty()) put(in0_.front(), m_.s_axis_tdata, m_.s_axis_tkeep, m_.s_axis_tlast);
    m_.s_axis_p1_tvalid = !in1_.empty();
    if (!in1_.empty()) put(in1_.front(), m_.s_axis_p1_tdata, m_.s_axis_p1_tkeep, m_.s_axis_p1_tlast);
    m_.m_axis_tready = pct(rng_) < ready_pct;
    m_.m_axis_p1_tready = pct(rng_) < ready_pct;
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
  std::mt19937 rng_;
  std::deque<Beat> in0_, in1_;
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

uint64_t frames_in(Tb& tb) {
  const uint32_t a = regmap::global_counter_addr(regmap::kGcFramesIn);
  return tb.read(a) | uint64_t{tb.read(a + 4)} << 32;
}

Frame contribution(uint16_t child, uint32_t seq, uint16_t port, float base) {
  auto h = test::contribution(3, 1, child, seq, 20);
  h.udp_dst = port;
  std::vector<uint32_t> p;
  for (int i = 0; i < 20; ++i) p.push_back(test::f2u(base + static_cast<float>(i)));
  return test::make_frame(h, p);
}

Frame other_frame(uint8_t tag, size_t len) {
  Frame f(len, tag);
  f[12] = 0x86;  // EtherType IPv6: never PANAMA
  f[13] = 0xDD;
  return f;
}

}  // namespace

TEST_CASE("two-port kernel: PANAMA frames to the engine, the rest from cage to cage", "[vitis][two_port]") {
  const uint32_t seed = std::getenv("PANAMA_TEST_SEED")
                            ? std::strtoul(std::getenv("PANAMA_TEST_SEED"), nullptr, 0)
                            : std::random_device{}();
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
  std::vector<Frame> expect_engine_out;
  for (const Frame* f : {&c0, &c1}) {
    model->process_frame(f->data(), static_cast<uint32_t>(f->size()),
                         [&](const uint8_t* d, uint32_t n) { expect_engine_out.emplace_back(d, d + n); });
  }
  REQUIRE(expect_engine_out.size() == 1);  // the aggregate
  tb.send0(c0);
  tb.send0(dns);
  tb.send0(v6);
  tb.send0(c1);
  const std::vector<Frame> far = {other_frame(0x21, 60), other_frame(0x22, 64), other_frame(0x23, 65),
                                  other_frame(0x24, 1500), contribution(1, 2, wire::kDefaultUdpPort, 7.0f)};
  for (const Frame& f : far) tb.send1(f);
  tb.run(ready);

  // Cage 1 gets cage 0's non-PANAMA frames, in order, untouched.
  CHECK(tb.out1.frames == std::vector<Frame>{dns, v6});
  // Cage 0 gets cage 1's frames (PANAMA or not: untouched) and the
  // aggregate, each whole; cage 1's keep their order.
  std::vector<Frame> from_far, from_engine;
  for (const Frame& f : tb.out0.frames) {
    bool is_far = false;
    for (const Frame& g : far) is_far |= f == g;
    (is_far ? from_far : from_engine).push_back(f);
  }
  CHECK(from_far == far);
  CHECK(from_engine == expect_engine_out);
  CHECK(tb.out0.cur.empty());
  CHECK(tb.out1.cur.empty());
  CHECK(frames_in(tb) == 2);  // the engine saw the two contributions only
}

TEST_CASE("two-port kernel: the classifier follows UDP_PORT and CONTROL.RESET", "[vitis][two_port]") {
  Tb tb(1);
  auto model = make_engine_backend("model");
  configure(tb, *model);
  const Frame to9600 = contribution(0, 0, 9600, 1.0f);
  const Frame to9700 = contribution(0, 0, 9700, 1.0f);

  tb.write(regmap::kUdpPort, 9700);
  tb.send0(to9600);  // no longer PANAMA: to cage 1
  tb.send0(to9700);  // PANAMA now: to the engine (waits for its sibling)
  tb.run(100);
  CHECK(tb.out1.frames == std::vector<Frame>{to9600});
  CHECK(tb.out0.frames.empty());
  CHECK(frames_in(tb) == 1);

  // RESET restores UDP_PORT to 9600, in the engine and in the classifier.
  tb.write(regmap::kControl, regmap::kControlReset | regmap::kControlEnable);
  CHECK(tb.read(regmap::kUdpPort) == 9600);
  tb.send0(to9700);
  tb.send0(to9600);
  tb.run(100);
  CHECK(tb.out1.frames == std::vector<Frame>{to9600, to9700});
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
  CHECK(tb.out1.frames[2] == runt);
  CHECK(tb.out1.frames[3] == options);
}
