// libFuzzer target: the allreduce core's frame input (AllreduceCore::on_frame),
// with the state around it driven by the input too. The core under test is
// worker 0 of a job of two on the in-memory fabric (panama/fabric/fabric.hpp):
// one PSwitch, the engine model, at the root of the job's trees; worker 1
// joins every allreduce, so results come from the real engine as well as
// from the input.
//
// Input: byte 0 chooses the plan (1 or 2 trees, 1..8 elements per packet,
// the initial cwnd_cap, a small retry budget), then records:
//   0 frame:  ctl (u8: bit 0 aim it at this job as a result-down, bit 1
//             repair lengths and checksum), len (u16), len bytes, straight
//             to worker 0
//   1 time:   the fabric runs for u8 * 100 us (at least one step: the
//             workers poll, the PSwitch aggregates and answers); the frames
//             worker 0 sends are kept
//   2 start:  an allreduce of u8 % 48 + 1 floats on both workers (at most 4
//             open)
//   3 answer: a kept frame (u8 picks which) comes back as a result-down,
//             its first payload byte xor u8
//   4 release the finished allreduces
//   5 loss:   u8: bit k set, the k-th next frame to arrive anywhere in the
//             fabric is lost
// Invariants, checked against this harness's own records for every frame
// worker 0 is handed (from the input or from the fabric):
//  - on_frame takes a frame exactly when it is a well-formed result-down of
//    the job (classify_frame says so and the job id matches);
//  - a user buffer changes only in the chunks the write observer reports
//    during that call, each chunk at most once, and then holds the frame's
//    payload bytes;
//  - an allreduce reported done had every one of its chunks written.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "fuzz_input.hpp"
#include "panama/engine.hpp"
#include "panama/engine/backend.hpp"
#include "panama/fabric/fabric.hpp"
#include "panama/runtime/allreduce_core.hpp"
#include "panama/wire.hpp"

using namespace panama;
using namespace panama::runtime;
using panama::fuzz::ByteReader;

namespace {

constexpr uint16_t kJob = 7;
constexpr uint32_t kSlotsPerTree = 16;
using FuzzEngine = Engine<4, 2 * kSlotsPerTree, 1>;  // 16 elements per slot

Plan plan_for(uint8_t b0, uint32_t rank) {
  Plan p;
  p.job_id = kJob;
  p.rank = rank;
  p.world_size = 2;
  p.local_mac = {0x02, 0, 0, 0, 1, static_cast<uint8_t>(rank)};
  p.local_ip = 0x0A000101u + rank;
  p.elems_per_packet = 1 + ((b0 >> 1) & 7);
  const uint32_t trees = 1 + (b0 & 1);
  for (uint32_t t = 0; t < trees; ++t) {
    TreePlan tp;
    tp.tree_id = static_cast<uint8_t>(10 + t);
    tp.child_id = static_cast<uint16_t>(t + 2 * rank);
    tp.dst_mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(0xF0 + t)};
    tp.dst_ip = 0x0A0000F0u + t;
    tp.initial_cwnd_cap = static_cast<uint16_t>(1 + ((b0 >> 4) & 3) * 3);
    p.trees.push_back(tp);
  }
  p.congestion.rto_initial_us = 300;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 2000;
  p.congestion.retry_budget = (b0 & 0x40) ? 2 : 1000;
  return p;
}

struct OpRecord {
  std::unique_ptr<std::vector<float>> data;  // the user buffer (stays put)
  std::vector<float> shadow;                 // what the harness expects it to hold
  std::set<size_t> written;                  // chunks the observer reported
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  const uint8_t b0 = in.u8();
  const Plan plan = plan_for(b0, 0);
  const size_t e = plan.elems_per_packet;

  // Declared before the fabric: the cores hold pointers into these buffers.
  std::map<OpId, OpRecord> ops;                              // worker 0's
  std::map<OpId, std::unique_ptr<std::vector<float>>> ops1;  // worker 1's
  fabric::Options options;
  options.make_engine = [] { return std::make_unique<ModelBackend<FuzzEngine>>(); };
  fabric::Fabric net(fabric::one_switch_topology({plan, plan_for(b0, 1)}, kSlotsPerTree), options);
  AllreduceCore& core = net.worker(0);

  std::vector<std::pair<OpId, size_t>> observed;  // during the current on_frame
  bool in_on_frame = false;
  core.set_write_observer([&](OpId id, size_t chunk) {
    PANAMA_FUZZ_CHECK(in_on_frame);
    observed.emplace_back(id, chunk);
  });

  std::vector<std::vector<uint8_t>> kept;
  static uint8_t frame[wire::kMaxFrameBytes + 100];

  auto deliver = [&](const uint8_t* f, uint32_t len) {
    const uint64_t now = net.now();
    wire::Header h;
    const bool ours =
        wire::classify_frame(f, len, plan.udp_port, h) == wire::FrameClass::kResultDown && h.job_id == kJob;
    observed.clear();
    in_on_frame = true;
    const bool taken = core.on_frame(f, len, now);
    in_on_frame = false;
    PANAMA_FUZZ_CHECK(taken == ours);
    PANAMA_FUZZ_CHECK(observed.size() <= 1);
    for (auto& [id, rec] : ops) {
      const std::vector<float>& buf = *rec.data;
      for (size_t c = 0; c * e < buf.size(); ++c) {
        const size_t first = c * e, n = std::min(buf.size(), first + e) - first;
        const bool reported =
            std::find(observed.begin(), observed.end(), std::make_pair(id, c)) != observed.end();
        if (reported) {
          PANAMA_FUZZ_CHECK(rec.written.insert(c).second);  // at most once
          PANAMA_FUZZ_CHECK(h.elem_count == n);
          PANAMA_FUZZ_CHECK(std::memcmp(buf.data() + first, f + wire::kPayloadOffset, 4 * n) == 0);
          std::memcpy(rec.shadow.data() + first, buf.data() + first, 4 * n);
        } else {
          PANAMA_FUZZ_CHECK(std::memcmp(buf.data() + first, rec.shadow.data() + first, 4 * n) == 0);
        }
      }
    }
  };

  uint32_t drop_bits = 0, drop_next = 0;
  net.on_arrival = [&](fabric::Endpoint, fabric::Endpoint, std::vector<uint8_t>&) {
    if (drop_next == 0) return true;
    --drop_next;
    const bool lost = drop_bits & 1;
    drop_bits >>= 1;
    return !lost;
  };
  net.on_worker_send = [&](uint32_t w, const std::vector<uint8_t>& f) {
    if (w == 0 && kept.size() < 256) kept.push_back(f);
  };
  net.deliver = [&](uint32_t w, const std::vector<uint8_t>& f) {
    if (w == 0) {
      deliver(f.data(), static_cast<uint32_t>(f.size()));
    } else {
      net.worker(w).on_frame(f.data(), static_cast<uint32_t>(f.size()), net.now());
    }
  };

  while (!in.done()) {
    switch (in.u8() % 6) {
      case 0: {
        const uint8_t ctl = in.u8();
        const uint32_t len = static_cast<uint32_t>(in.bytes(frame, in.u16() % sizeof(frame)));
        if ((ctl & 1) && len >= wire::kPayloadOffset) {
          wire::store_be16(frame + wire::kEthType, wire::kEtherTypeIpv4);
          frame[wire::kIpVerIhl] = 0x45;
          frame[wire::kIpProto] = wire::kIpProtoUdp;
          wire::store_be16(frame + wire::kIpFlagsFrag, 0x4000);
          wire::store_be16(frame + wire::kUdpDstPort, plan.udp_port);
          frame[wire::kPanamaVersion] = wire::kVersion;
          frame[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kResultDown);
          wire::store_be16(frame + wire::kPanamaJobId, kJob);
          frame[wire::kPanamaElemType] = static_cast<uint8_t>(wire::ElemType::kFloat32);
        }
        if (ctl & 2) panama::fuzz::repair_lengths(frame, len);
        deliver(frame, len);
        break;
      }
      case 1: {
        const uint64_t until = net.now() + uint64_t{in.u8()} * 100'000;
        for (int steps = 0; steps < 100000; ++steps) {
          net.step(until - net.now());
          if (net.now() >= until) break;
        }
        break;
      }
      case 2: {
        const size_t n = in.u8() % 48 + 1;
        if (core.tracked_ops() >= 4) break;
        OpRecord rec;
        rec.data = std::make_unique<std::vector<float>>(n);
        for (size_t k = 0; k < n; ++k) (*rec.data)[k] = static_cast<float>(k + 1);
        rec.shadow = *rec.data;
        const OpId id = core.start(rec.data->data(), n, net.now());
        ops.emplace(id, std::move(rec));
        auto other = std::make_unique<std::vector<float>>(n, 0.5f);
        const OpId id1 = net.worker(1).start(other->data(), n, net.now());
        ops1.emplace(id1, std::move(other));
        break;
      }
      case 3: {
        const uint8_t pick = in.u8(), flip = in.u8();
        if (kept.empty()) break;
        std::vector<uint8_t> f = kept[pick % kept.size()];
        if (f.size() < wire::kPayloadOffset) break;
        f[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kResultDown);
        if (f.size() > wire::kPayloadOffset) f[wire::kPayloadOffset] ^= flip;
        deliver(f.data(), static_cast<uint32_t>(f.size()));
        break;
      }
      case 4:
        for (auto it = ops.begin(); it != ops.end();) {
          if (core.status(it->first) == OpStatus::kPending) {
            ++it;
            continue;
          }
          core.release(it->first);
          it = ops.erase(it);
        }
        for (auto it = ops1.begin(); it != ops1.end();) {
          if (net.worker(1).status(it->first) == OpStatus::kPending) {
            ++it;
            continue;
          }
          net.worker(1).release(it->first);
          it = ops1.erase(it);
        }
        break;
      case 5:
        drop_bits = in.u8();
        drop_next = 8;
        break;
    }
    for (auto& [id, rec] : ops) {
      if (core.status(id) == OpStatus::kDone) {
        PANAMA_FUZZ_CHECK(rec.written.size() == (rec.data->size() + e - 1) / e);
      }
    }
  }
  return 0;
}
