// panama-bench-worker: the worker's CPU cost per packet.
//
// --mode core (default): the protocol core alone, no network. Each frame the
// core builds is turned into its own result (type 2, cwnd_cap 64) and fed
// back, so one "packet" = build + send bookkeeping + result validation + copy
// into the user's buffer + congestion control. Single thread, fixed buffers.
// --mode ring: the full runtime (progress thread, DPDK mbufs, burst I/O)
// through a net_ring pair to an in-process engine (single-child tree); the
// figure then includes the engine thread, on the same cores.
//
// --zero-copy-send: frames carry the payload from the user's buffer (an
// attached segment) instead of a copy. In core mode the echo then answers
// with the payload its frame slot already holds (the bench's results need
// not be sums), so the figure is the worker's side alone; in ring mode the
// in-process engine joins the two pieces on its own thread.
//
// --dtype bf16|fp16: allreduces of 16-bit elements; a packet of the same
// payload bytes then carries twice the elements (the plan's elems_per_packet
// is payload / element size).
//
// Prints ns/packet, packets/s and payload Gbit/s for each payload size.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "panama/runtime/allreduce_core.hpp"
#include "panama/runtime/loopback_switch.hpp"
#include "panama/runtime/runtime.hpp"

using namespace panama;
using namespace panama::runtime;

namespace {

Plan bench_plan(uint32_t elems, unsigned trees) {
  Plan p;
  p.job_id = 1;
  p.local_mac = {0x02, 0, 0, 0, 1, 0};
  p.local_ip = 0x0A000101u;
  p.elems_per_packet = elems;
  for (unsigned t = 0; t < trees; ++t) {
    TreePlan tp;
    tp.tree_id = static_cast<uint8_t>(t);
    tp.dst_mac = {0x02, 0, 0, 0, 0, 0xFE};
    tp.dst_ip = 0x0A0000FEu;
    tp.initial_cwnd_cap = 64;
    p.trees.push_back(tp);
  }
  p.congestion.initial_cwnd = 64;
  return p;
}

// Preallocated frame buffers; every built frame is echoed back as a result.
class EchoOut : public FrameOut {
 public:
  static constexpr uint32_t kSlots = 128;
  explicit EchoOut(bool attach) : bufs_(kSlots * wire::kMaxFrameBytes), attach_(attach) {}
  bool can_attach() const override { return attach_; }
  uint8_t* begin_frame_attached(const uint8_t*, uint32_t payload_len, BufferHold* hold) override {
    uint8_t* f = begin_frame(wire::kPayloadOffset + payload_len);
    if (f) {
      hold->acquire();
      holds_[n_] = hold;
    }
    return f;
  }
  uint8_t* begin_frame(uint32_t len) override {
    if (n_ == kSlots || len > wire::kMaxFrameBytes) return nullptr;
    holds_[n_] = nullptr;
    return &bufs_[size_t{n_} * wire::kMaxFrameBytes];
  }
  void end_frame(uint32_t len) override {
    uint8_t* f = &bufs_[size_t{n_} * wire::kMaxFrameBytes];
    f[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kResultDown);
    wire::store_be16(f + wire::kPanamaCwndCap, 64);
    lens_[n_++] = len;
  }
  void feed(AllreduceCore& core, uint64_t now) {
    for (uint32_t i = 0; i < n_; ++i) {
      if (holds_[i]) holds_[i]->release();  // the "device" has read the attached payload
      core.on_frame(&bufs_[size_t{i} * wire::kMaxFrameBytes], lens_[i], now);
    }
    n_ = 0;
  }

 private:
  std::vector<uint8_t> bufs_;
  bool attach_;
  uint32_t lens_[kSlots];
  BufferHold* holds_[kSlots] = {};
  uint32_t n_ = 0;
};

const char* type_name(wire::ElemType t) {
  return t == wire::ElemType::kFloat32 ? "fp32" : t == wire::ElemType::kBfloat16 ? "bf16" : "fp16";
}

void report(const char* mode, uint32_t elems, wire::ElemType type, uint64_t packets, double seconds) {
  const double ns = seconds * 1e9 / static_cast<double>(packets);
  const uint32_t eb = wire::elem_bytes(static_cast<uint8_t>(type));
  std::printf(
      "%-4s payload %5u B (%4u %s): %8.1f ns/packet  %7.3f Mpps  %7.2f Gbit/s payload  (%llu packets)\n",
      mode, elems * eb, elems, type_name(type), ns, packets / seconds / 1e6,
      packets * elems * eb * 8.0 / seconds / 1e9, static_cast<unsigned long long>(packets));
}

// `elements` elements of `type` (1.0 in each type: 0x3F800000, 0x3F80, 0x3C00).
std::vector<uint8_t> ones(size_t elements, wire::ElemType type) {
  const uint32_t eb = wire::elem_bytes(static_cast<uint8_t>(type));
  const uint32_t one = type == wire::ElemType::kFloat32    ? 0x3F800000u
                       : type == wire::ElemType::kBfloat16 ? 0x3F80u
                                                           : 0x3C00u;
  std::vector<uint8_t> v(elements * eb);
  for (size_t i = 0; i < elements; ++i) std::memcpy(&v[i * eb], &one, eb);  // little-endian host
  return v;
}

void bench_core(uint32_t elems, wire::ElemType type, unsigned trees, size_t elements, double min_seconds,
                size_t streaming, bool zero_copy) {
  AllreduceCore core(bench_plan(elems, trees));
  core.set_streaming_copy_bytes(streaming);
  core.set_zero_copy_send(zero_copy);
  std::vector<uint8_t> buf = ones(elements, type);
  EchoOut out(zero_copy);
  uint64_t packets = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double s = 0;
  do {
    core.release(core.start(buf.data(), elements, type, 0));
    while (core.pending_ops() > 0) {
      core.poll(0, out, 128);
      out.feed(core, 0);
    }
    packets = core.stats().packets_sent;
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (s < min_seconds);
  if (core.stats().retransmissions != 0) std::fprintf(stderr, "warning: unexpected retransmissions\n");
  report("core", elems, type, packets, s);
}

void bench_ring(uint32_t elems, wire::ElemType type, unsigned trees, size_t elements, double min_seconds,
                size_t streaming, bool zero_copy, std::shared_ptr<DpdkEal> eal, unsigned idx) {
  const auto names = eal->create_ring_pair("bw" + std::to_string(idx), "bs" + std::to_string(idx));
  LoopbackSwitchConfig sc;
  sc.ports = {names.second};
  for (unsigned t = 0; t < trees; ++t) sc.entries.push_back({1, static_cast<uint8_t>(t), 1, 0x1, 64});
  LoopbackSwitch sw(eal, sc);
  RuntimeOptions o;
  o.idle = IdlePolicy::busy();  // as a dedicated worker core would
  o.streaming_copy_bytes = streaming;
  o.zero_copy_send = zero_copy;
  auto rt = Runtime::create(eal, o);
  auto comm = rt->communicator(bench_plan(elems, trees), names.first);
  std::vector<uint8_t> buf = ones(elements, type);
  comm->allreduce(buf.data(), elements, type);  // warm-up (pools, cwnd)
  const uint64_t before = comm->stats().packets_sent;
  const auto t0 = std::chrono::steady_clock::now();
  double s = 0;
  do {
    comm->allreduce(buf.data(), elements, type);
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (s < min_seconds);
  const CommStats st = comm->stats();
  report("ring", elems, type, st.packets_sent - before, s);
  if (st.retransmissions) {
    std::printf("      (%llu retransmissions)\n", static_cast<unsigned long long>(st.retransmissions));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"PANAMA worker CPU cost per packet"};
  std::string mode = "core", eal = "--no-huge -m 1024 --no-pci --no-telemetry --log-level=lib.eal:error";
  std::vector<uint32_t> payloads = {1024, 4096};
  unsigned trees = 1;
  size_t floats = 1 << 20;
  std::string dtype = "fp32";
  double seconds = 2.0;
  size_t streaming = RuntimeOptions{}.streaming_copy_bytes;
  bool zero_copy = RuntimeOptions{}.zero_copy_send;
  app.add_option("--mode", mode, "core (protocol core only) or ring (runtime + net_ring + engine)")
      ->capture_default_str()
      ->check(CLI::IsMember({"core", "ring"}));
  app.add_option("--payload", payloads, "payload bytes per packet (multiples of the element size)")
      ->capture_default_str();
  app.add_option("--dtype", dtype, "element type of the allreduces")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_option("--trees", trees, "trees")->capture_default_str()->check(CLI::Range(1u, 64u));
  app.add_option("--floats", floats, "elements per allreduce (of --dtype)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 28));
  app.add_option("--seconds", seconds, "minimum measuring time per payload size")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--streaming-copy-bytes", streaming,
                 "allreduces at least this large copy payloads with streaming stores (0: never)")
      ->capture_default_str();
  app.add_option("--zero-copy-send", zero_copy,
                 "send payloads from the buffer (attached segments) instead of copying them into frames")
      ->capture_default_str();
  app.add_option("--eal", eal, "EAL arguments for --mode ring")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    std::shared_ptr<DpdkEal> e;
    if (mode == "ring") {
      std::istringstream in(eal);
      std::vector<std::string> args;
      for (std::string w; in >> w;) args.push_back(w);
      e = DpdkEal::initialize(args);
    }
    const wire::ElemType type = std::map<std::string, wire::ElemType>{
        {"fp32", wire::ElemType::kFloat32},
        {"bf16", wire::ElemType::kBfloat16},
        {"fp16",
         wire::ElemType::kFloat16}}.at(dtype);
    const uint32_t eb = wire::elem_bytes(static_cast<uint8_t>(type));
    unsigned idx = 0;
    for (uint32_t bytes : payloads) {
      // A plan's elems_per_packet is at most kMaxElemsPerFrame (fp32-sized frames).
      if (bytes % eb != 0 || bytes == 0 || bytes / eb > wire::kMaxElemsPerFrame) {
        std::fprintf(stderr, "error: --payload %u: must be a multiple of %u in [%u, %u] for %s\n", bytes, eb,
                     eb, eb * wire::kMaxElemsPerFrame, dtype.c_str());
        return 2;
      }
      if (mode == "core") {
        bench_core(bytes / eb, type, trees, floats, seconds, streaming, zero_copy);
      } else {
        bench_ring(bytes / eb, type, trees, floats, seconds, streaming, zero_copy, e, idx++);
      }
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "error: %s\n", ex.what());
    return 1;
  }
  return 0;
}
