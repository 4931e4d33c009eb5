// The RTL-versus-model comparison of a scenario (cosim.hpp compare()).
#include <memory>
#include <sstream>

#include "panama/cosim.hpp"
#include "panama/engine_backend.hpp"
#include "panama/regmap.hpp"

namespace panama::cosim {

namespace {
using namespace panama::regmap;
constexpr uint32_t kEntries = RtlEngine::kTableEntries;
}  // namespace

namespace {

std::string hex_diff(const Frame& a, const Frame& b) {
  std::ostringstream o;
  o << "lengths " << a.size() << " (model) and " << b.size() << " (rtl)";
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) {
      o << ", first difference at byte " << i << ": model 0x" << std::hex << int{a[i]} << " rtl 0x"
        << int{b[i]} << std::dec;
      break;
    }
  }
  return o.str();
}

template <class E>
void apply_writes(E& eng, const std::vector<RegWrite>& w, std::vector<uint32_t>* statuses) {
  for (const auto& r : w) {
    eng.reg_write(r.addr, r.value);
    if (r.addr == kEntryCmd) statuses->push_back(eng.reg_read(kEntryStatus));
  }
}

// Every register and counter, read the way a driver reads them.
template <class E>
std::vector<uint32_t> read_all(E& eng) {
  std::vector<uint32_t> v;
  for (uint32_t a = 0; a < kGlobalCounterBase; a += 4) v.push_back(eng.reg_read(a));
  for (uint32_t c = 0; c < kNumGlobalCounters; ++c) {
    v.push_back(eng.reg_read(global_counter_addr(c)));
    v.push_back(eng.reg_read(global_counter_addr(c) + 4));
  }
  for (uint32_t e = 0; e < kEntries; ++e) {
    for (uint32_t c = 0; c < kNumEntryCounters; ++c) {
      v.push_back(eng.reg_read(entry_counter_addr(e, c)));
      v.push_back(eng.reg_read(entry_counter_addr(e, c) + 4));
    }
  }
  return v;
}

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
  CompareResult res;
  auto model = std::make_unique<ModelBackend<RtlEngine::ModelEngine>>();
  rtl.set_shaping(shaping);
  rtl.reset_stats();
  std::vector<uint32_t> ms, rs;
  apply_writes(*model, sc.setup, &ms);
  apply_writes(rtl, sc.setup, &rs);
  auto fail = [&](const std::string& m) {
    res.ok = false;
    std::ostringstream o;
    o << "seed " << sc.seed << ": " << m;
    res.message = o.str();
    res.stats = rtl.stats();
    return res;
  };
  if (ms != rs) return fail("entry command statuses differ after set-up");

  size_t base = 0;
  for (size_t s = 0; s < sc.segments.size(); ++s) {
    const auto& frames = sc.segments[s];
    std::vector<Frame> mout, rout;
    std::vector<EngineOutcome> moc;
    auto msink = [&](const uint8_t* d, uint32_t n) { mout.emplace_back(d, d + n); };
    static const std::vector<uint8_t> kNoMacErrors;
    const std::vector<uint8_t>& mac = s < sc.mac_errors.size() ? sc.mac_errors[s] : kNoMacErrors;
    for (size_t i = 0; i < frames.size(); ++i) {
      const auto& f = frames[i];
      const bool bad = !mac.empty() && mac.at(i) != 0;
      moc.push_back(model->process_frame(f.data(), static_cast<uint32_t>(f.size()), msink, bad));
    }
    const std::vector<EngineOutcome> roc = rtl.run(
        frames, [&](const uint8_t* d, uint32_t n) { rout.emplace_back(d, d + n); }, mac);
    for (size_t i = 0; i < frames.size(); ++i) {
      const EngineOutcome& a = moc[i];
      const EngineOutcome& b = roc[i];
      const bool dropped = a.action == EngineAction::kDropped;
      if (a.action != b.action || a.entry != b.entry || (dropped && a.drop_counter != b.drop_counter)) {
        std::ostringstream o;
        o << "frame " << base + i << " (" << frames[i].size() << " bytes): model action "
          << static_cast<int>(a.action) << " counter " << a.drop_counter << " entry " << a.entry
          << ", rtl action " << static_cast<int>(b.action) << " counter " << b.drop_counter << " entry "
          << b.entry;
        return fail(o.str());
      }
    }
    if (mout.size() != rout.size()) {
      std::ostringstream o;
      o << "segment " << s << ": model sent " << mout.size() << " frames, rtl " << rout.size();
      return fail(o.str());
    }
    for (size_t i = 0; i < mout.size(); ++i) {
      if (mout[i] != rout[i]) {
        std::ostringstream o;
        o << "segment " << s << " emitted frame " << i << " differs: " << hex_diff(mout[i], rout[i]);
        return fail(o.str());
      }
    }
    res.emitted += mout.size();
    base += frames.size();
    ms.clear();
    rs.clear();
    apply_writes(*model, sc.between[s], &ms);
    apply_writes(rtl, sc.between[s], &rs);
    if (ms != rs) return fail("entry command statuses differ between segments");
  }
  const auto mr = read_all(*model);
  const auto rr = read_all(rtl);
  for (size_t i = 0; i < mr.size(); ++i) {
    if (mr[i] != rr[i]) {
      std::ostringstream o;
      o << reg_name(i) << ": model " << mr[i] << " rtl " << rr[i];
      return fail(o.str());
    }
  }
  res.frames = base;
  res.stats = rtl.stats();
  return res;
}

}  // namespace panama::cosim
