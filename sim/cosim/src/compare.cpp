// The RTL-versus-model comparison of a scenario (cosim.hpp compare()).
#include <memory>
#include <sstream>

#include "panama/cosim/cosim.hpp"
#include "panama/engine/backend.hpp"
#include "panama/regmap.hpp"

namespace panama::cosim {

namespace {
using namespace panama::regmap;
}  // namespace

namespace {

std::string reg_name(size_t i) {
  std::ostringstream o;
  const size_t plain = kGlobalCounterBase / 4;
  if (i < plain) {
    o << "register 0x" << std::hex << 4 * i;
  } else if (i < plain + 2 * kNumGlobalCounters) {
    o << "global counter " << kGlobalCounterNames[(i - plain) / 2]
      << ((i - plain) % 2 ? " (high)" : " (low)");
  } else {
    const size_t k = i - plain - 2 * kNumGlobalCounters;
    o << "entry " << k / (2 * kNumEntryCounters) << " counter "
      << kEntryCounterNames[(k / 2) % kNumEntryCounters] << (k % 2 ? " (high)" : " (low)");
  }
  return o.str();
}

}  // namespace

CompareResult compare(const Scenario& sc, RtlEngine& rtl, const StreamShaping& shaping) {
  auto model = std::make_unique<ModelBackend<RtlEngine::ModelEngine>>();
  return compare_segments(
      sc, "model", *model, rtl, shaping, true,
      [&](const std::vector<Frame>& frames, const std::vector<uint8_t>& mac,
          const std::vector<EngineOutcome>& rtl_out, std::vector<EngineOutcome>* outcomes,
          std::vector<Frame>* emitted) {
        EmitFn sink([&](const uint8_t* d, uint32_t n) { emitted->emplace_back(d, d + n); });
        for (size_t i = 0; i < frames.size(); ++i) {
          const Frame& f = frames[i];
          const bool bad = !mac.empty() && mac.at(i) != 0;
          // A frame the RTL's receive FIFO dropped for room never reached
          // its engine: the model is told (a MAC-error frame is dropped as
          // such by both, whatever the room).
          if (!bad && i < rtl_out.size() && rx_overflow_drop(rtl_out[i])) {
            outcomes->push_back(model->engine().count_rx_overflow());
            continue;
          }
          outcomes->push_back(model->process_frame(f.data(), static_cast<uint32_t>(f.size()), sink, bad));
        }
      });
}

std::string diff_outcomes(const char* ref, const std::vector<Frame>& frames, size_t first,
                          const std::vector<EngineOutcome>& ref_out,
                          const std::vector<EngineOutcome>& rtl_out) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const EngineOutcome& a = ref_out.at(i);
    const EngineOutcome& b = rtl_out.at(i);
    const bool dropped = a.action == EngineAction::kDropped;
    if (a.action != b.action || a.entry != b.entry || (dropped && a.drop_counter != b.drop_counter)) {
      std::ostringstream o;
      o << "frame " << first + i << " (" << frames[i].size() << " bytes): " << ref << " action "
        << static_cast<int>(a.action) << " counter " << a.drop_counter << " entry " << a.entry
        << ", rtl action " << static_cast<int>(b.action) << " counter " << b.drop_counter << " entry "
        << b.entry;
      return o.str();
    }
  }
  return "";
}

std::string diff_emitted(const char* ref, size_t segment, const std::vector<Frame>& ref_frames,
                         const std::vector<Frame>& rtl_frames) {
  std::ostringstream o;
  if (ref_frames.size() != rtl_frames.size()) {
    o << "segment " << segment << ": " << ref << " sent " << ref_frames.size() << " frames, rtl "
      << rtl_frames.size();
    return o.str();
  }
  for (size_t i = 0; i < ref_frames.size(); ++i) {
    const Frame& a = ref_frames[i];
    const Frame& b = rtl_frames[i];
    if (a == b) continue;
    o << "segment " << segment << " emitted frame " << i << " differs: lengths " << a.size() << " (" << ref
      << ") and " << b.size() << " (rtl)";
    for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
      if (a[k] != b[k]) {
        o << ", first difference at byte " << k << " (beat " << k / wire::kBeatBytes << " byte "
          << k % wire::kBeatBytes << "): " << ref << " 0x" << std::hex << int{a[k]} << " rtl 0x" << int{b[k]}
          << std::dec;
        break;
      }
    }
    return o.str();
  }
  return "";
}

std::string diff_registers(const char* ref, const std::vector<uint32_t>& ref_words,
                           const std::vector<uint32_t>& rtl_words) {
  for (size_t i = 0; i < ref_words.size() && i < rtl_words.size(); ++i) {
    if (ref_words[i] != rtl_words[i]) {
      std::ostringstream o;
      o << reg_name(i) << ": " << ref << " " << ref_words[i] << " rtl " << rtl_words[i];
      return o.str();
    }
  }
  return ref_words.size() == rtl_words.size() ? "" : "register read-outs differ in length";
}

}  // namespace panama::cosim
