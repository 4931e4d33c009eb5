// Co-simulation of the RTL engine against the HLS C++ model: traffic
// generation (seeded), table configuration and the frame-by-frame and
// counter comparison. Failing or recorded traffic is read and written with
// the project's pcap reader/writer (panama/pcap/pcap_file.hpp).
#pragma once

#include <cstdint>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "panama/cosim/rtl_engine.hpp"
#include "panama/regmap.hpp"

namespace panama::cosim {

using Frame = std::vector<uint8_t>;

// One register write; addr == kBarrier marks a point where the traffic is
// split (the writes after it run between two segments of frames).
struct RegWrite {
  uint32_t addr;
  uint32_t value;
};

// A test scenario: configuration, then segments of frames with register
// writes between them (enable/disable, counter clears, table changes).
struct Scenario {
  uint64_t seed = 0;
  std::vector<RegWrite> setup;
  std::vector<std::vector<Frame>> segments;
  std::vector<std::vector<RegWrite>> between;  // between[i] runs after segments[i]
  // mac_errors[i]: empty, or one flag per frame of segments[i] (the MAC marks
  // the frame bad: s_axis_tuser[0] on the RTL, mac_error on the model).
  std::vector<std::vector<uint8_t>> mac_errors;
  size_t frame_count() const;
};

struct TrafficOptions {
  uint32_t frames = 2000;   // frames in the scenario
  uint32_t max_elems = 64;  // usual largest element count (some frames go up to a full slot)
  double malformed = 0.08;  // fraction of malformed PANAMA frames
  double foreign = 0.06;    // fraction of non-PANAMA and result-down frames
  double duplicate = 0.08;  // fraction of frames sent again
  double retransmission = 0.06;
  double mac_error = 0.02;       // fraction of frames the MAC marks bad
  bool register_changes = true;  // register writes between segments
};

// A random scenario: several jobs and trees, interleaved, with duplicates,
// retransmissions, malformed and foreign frames; fp32, bf16 and fp16
// contributions mixed (one type per sequence of an entry, so per slot bank,
// with about 1 frame in 40 of another type: DROP_TYPE_MISMATCH), and now and
// then a 16-bit frame over the slot's capacity.
Scenario random_scenario(uint64_t seed, const TrafficOptions& opt);

// Line-rate scenario: `jobs` entries of fan-in `fan_in` (children 0 ..
// fan_in - 1, at most 64), every frame `frame_bytes` long (a PANAMA frame of
// that size, elements of `elem_type`: (frame_bytes - 64) / 4 fp32 or / 2
// bf16 or fp16 elements; a 16-bit frame with more than SLOT_ELEMS elements
// is dropped by the engines, DROP_BAD_ELEM_COUNT). Order: `same_slot_runs`
// sends the fan_in contributions to one slot back to back (then the next
// job), so consecutive frames hit the same slot words (read-after-write
// hazards); otherwise jobs are interleaved, so consecutive frames go to
// different slots (a slot recurs every `jobs` frames).
Scenario line_rate_scenario(uint32_t frame_bytes, uint32_t jobs, uint32_t frames, uint32_t fan_in = 4,
                            bool same_slot_runs = true, uint8_t elem_type = 1);

// A scenario from recorded frames (a pcap), with a table that aggregates
// every (job, tree) found in it (fan-in = number of children seen).
Scenario scenario_from_frames(const std::vector<Frame>& frames);

struct CompareResult {
  bool ok = true;
  std::string message;  // first difference, when !ok
  size_t frames = 0;
  size_t emitted = 0;  // frames sent by the engines
  CycleStats stats;    // RTL cycle figures
};

// Runs `sc` on a fresh HLS model (the model backend in the RTL's
// configuration) and on `rtl` (reset first through CONTROL)
// and compares every outcome, every emitted frame bit for bit, the entry
// command statuses, every register and every counter.
CompareResult compare(const Scenario& sc, RtlEngine& rtl, const StreamShaping& shaping);

// Building blocks of the comparisons of the RTL against a reference (the
// model in compare(), the HLS kernel's stages in compare_kernel()). The
// diff_* functions return an empty string when both sides agree, else the
// first difference; `ref` names the reference in messages.

// Applies register writes, recording ENTRY_STATUS after every ENTRY_CMD.
template <class E>
void apply_writes(E& eng, const std::vector<RegWrite>& w, std::vector<uint32_t>* statuses) {
  for (const auto& r : w) {
    eng.reg_write(r.addr, r.value);
    if (r.addr == regmap::kEntryCmd) statuses->push_back(eng.reg_read(regmap::kEntryStatus));
  }
}

// Every register and counter word, read the way a driver reads them (low
// word first, so the high word comes from the latch).
template <class E>
std::vector<uint32_t> read_all(E& eng) {
  using namespace regmap;
  std::vector<uint32_t> v;
  for (uint32_t a = 0; a < kGlobalCounterBase; a += 4) v.push_back(eng.reg_read(a));
  for (uint32_t c = 0; c < kNumGlobalCounters; ++c) {
    v.push_back(eng.reg_read(global_counter_addr(c)));
    v.push_back(eng.reg_read(global_counter_addr(c) + 4));
  }
  for (uint32_t e = 0; e < RtlEngine::kTableEntries; ++e) {
    for (uint32_t c = 0; c < kNumEntryCounters; ++c) {
      v.push_back(eng.reg_read(entry_counter_addr(e, c)));
      v.push_back(eng.reg_read(entry_counter_addr(e, c) + 4));
    }
  }
  return v;
}

// Per-frame outcomes of a segment whose first frame has index `first`.
std::string diff_outcomes(const char* ref, const std::vector<Frame>& frames, size_t first,
                          const std::vector<EngineOutcome>& ref_out,
                          const std::vector<EngineOutcome>& rtl_out);
// Frames emitted during segment `segment`, bit for bit.
std::string diff_emitted(const char* ref, size_t segment, const std::vector<Frame>& ref_frames,
                         const std::vector<Frame>& rtl_frames);
// Two read_all() results, naming the first register or counter word that differs.
std::string diff_registers(const char* ref, const std::vector<uint32_t>& ref_words,
                           const std::vector<uint32_t>& rtl_words);

// Whether the RTL's receive frame FIFO dropped the frame for room (its
// outcome; the engine itself never gives this counter).
inline bool rx_overflow_drop(const EngineOutcome& o) {
  return o.action == EngineAction::kDropped && o.drop_counter == regmap::kGcDropRxOverflow;
}

// The comparison loop shared by compare() and compare_kernel(): set-up
// writes on both sides, then per segment the RTL's run, the reference's run
// (`run_ref(frames, mac_flags, rtl_outcomes, &outcomes, &emitted)`, which may
// throw; `rtl_outcomes` tells it which frames the RTL's receive FIFO dropped
// for room: rx_overflow_drop), the outcome and frame differences and the
// writes between segments, and at the end every register and counter. With
// `rtl_mac_errors` the RTL gets the scenario's MAC-error flags too.
template <class Ref, class RunRef>
CompareResult compare_segments(const Scenario& sc, const char* ref_name, Ref& ref, RtlEngine& rtl,
                               const StreamShaping& shaping, bool rtl_mac_errors, RunRef run_ref) {
  CompareResult res;
  rtl.set_shaping(shaping);
  rtl.reset_stats();
  auto fail = [&](const std::string& m) {
    res.ok = false;
    res.message = "seed " + std::to_string(sc.seed) + ": " + m;
    res.stats = rtl.stats();
    return res;
  };
  std::vector<uint32_t> ref_status, rtl_status;
  apply_writes(ref, sc.setup, &ref_status);
  apply_writes(rtl, sc.setup, &rtl_status);
  if (ref_status != rtl_status) return fail("entry command statuses differ after set-up");

  static const std::vector<uint8_t> kNoMacErrors;
  size_t base = 0;
  for (size_t s = 0; s < sc.segments.size(); ++s) {
    const auto& frames = sc.segments[s];
    const std::vector<uint8_t>& mac = s < sc.mac_errors.size() ? sc.mac_errors[s] : kNoMacErrors;
    std::vector<Frame> ref_frames, rtl_frames;
    std::vector<EngineOutcome> ref_out;
    EmitFn rtl_sink([&](const uint8_t* d, uint32_t n) { rtl_frames.emplace_back(d, d + n); });
    const std::vector<EngineOutcome> rtl_out = rtl.run(frames, rtl_sink, rtl_mac_errors ? mac : kNoMacErrors);
    try {
      run_ref(frames, mac, rtl_out, &ref_out, &ref_frames);
    } catch (const std::exception& e) {
      return fail(std::string(ref_name) + ": " + e.what());
    }
    if (auto d = diff_outcomes(ref_name, frames, base, ref_out, rtl_out); !d.empty()) return fail(d);
    if (auto d = diff_emitted(ref_name, s, ref_frames, rtl_frames); !d.empty()) return fail(d);
    res.emitted += ref_frames.size();
    base += frames.size();
    ref_status.clear();
    rtl_status.clear();
    apply_writes(ref, sc.between[s], &ref_status);
    apply_writes(rtl, sc.between[s], &rtl_status);
    if (ref_status != rtl_status) return fail("entry command statuses differ between segments");
  }
  if (auto d = diff_registers(ref_name, read_all(ref), read_all(rtl)); !d.empty()) return fail(d);
  res.frames = base;
  res.stats = rtl.stats();
  return res;
}

// All frames of a scenario in order (for writing a failing run).
std::vector<Frame> all_frames(const Scenario& sc);

// Median etc. of a latency list.
struct LatencySummary {
  uint32_t min = 0, median = 0, max = 0;
};
LatencySummary summarize(std::vector<uint32_t> v);

}  // namespace panama::cosim
