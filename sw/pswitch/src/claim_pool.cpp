// The pool's rules (claim_pool.hpp).
#include "panama/pswitch/claim_pool.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace panama::pswitch {

using claim::Answer;
using claim::Reason;

ClaimPool::ClaimPool(const PoolConfig& config, std::vector<PooledEntry> entries) : cfg_(config) {
  if (cfg_.size > kMaxSlots) {
    throw std::invalid_argument("claim pool: " + std::to_string(cfg_.size) + " slots, at most " +
                                std::to_string(kMaxSlots));
  }
  if (cfg_.base > UINT32_MAX - cfg_.size) throw std::invalid_argument("claim pool: base + size overflows");
  if (cfg_.lease_ns == 0) throw std::invalid_argument("claim pool: the lease must be > 0");
  entries_.reserve(entries.size());
  for (const PooledEntry& c : entries) {
    const std::string name =
        "claim pool: entry (" + std::to_string(c.job) + ", " + std::to_string(c.tree) + ")";
    if (c.group_size == 0 || c.group_size > kMaxSlots) {
      throw std::invalid_argument(name + ": group size " + std::to_string(c.group_size) + " not in 1.." +
                                  std::to_string(kMaxSlots));
    }
    if (c.children == 0 || c.children > kMaxChildren) {
      throw std::invalid_argument(name + ": " + std::to_string(c.children) + " children, not in 1.." +
                                  std::to_string(kMaxChildren));
    }
    if (find_entry(c.job, c.tree) >= 0) throw std::invalid_argument(name + ": pooled twice");
    Entry e;
    e.cfg = c;
    e.child_released.assign(c.children, 0);
    e.asked.assign(c.children, false);
    entries_.push_back(std::move(e));
  }
}

int ClaimPool::find_entry(uint16_t job, uint8_t tree) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].cfg.job == job && entries_[i].cfg.tree == tree) return static_cast<int>(i);
  }
  return -1;
}

void ClaimPool::count_denied(Entry& e, Reason r) {
  ++e.ctr.denied[static_cast<uint8_t>(r)];
  ++total_.denied[static_cast<uint8_t>(r)];
}

void ClaimPool::count_verdict(Entry& e, const GroupView& g) {
  if (g.denied) {
    count_denied(e, g.why);
  } else {
    count(e, &PoolCounters::granted);
  }
}

int ClaimPool::find_run(uint32_t n) const {
  uint32_t run = 0;
  for (uint32_t i = 0; i < cfg_.size; ++i) {
    run = used_[i] ? 0 : run + 1;
    if (run == n) return static_cast<int>(i + 1 - n);
  }
  return -1;
}

Reason ClaimPool::reserve(Entry& e, GroupView& g, uint64_t now_ns) {
  const uint32_t n = e.cfg.group_size;
  if (e.ctr.slots_held + n > e.cfg.claim_cap) return Reason::kOverCap;
  if (cfg_.max_groups != 0 && holding_ >= cfg_.max_groups) return Reason::kPoolFull;
  const int at = find_run(n);
  if (at < 0) return Reason::kPoolFull;
  ++holding_;
  for (uint32_t i = 0; i < n; ++i) used_[static_cast<uint32_t>(at) + i] = true;
  g.holds = true;
  g.slot = cfg_.base + static_cast<uint32_t>(at);
  g.deadline = now_ns + cfg_.lease_ns;
  e.ctr.slots_held += n;
  total_.slots_held += n;
  e.ctr.slots_high_water = std::max(e.ctr.slots_high_water, e.ctr.slots_held);
  total_.slots_high_water = std::max(total_.slots_high_water, total_.slots_held);
  count(e, &PoolCounters::reservations);
  return Reason::kNone;
}

void ClaimPool::free_slots_of(Entry& e, GroupView& g) {
  if (!g.holds) return;
  const uint32_t n = e.cfg.group_size;
  for (uint32_t i = 0; i < n; ++i) used_[g.slot - cfg_.base + i] = false;
  g.holds = false;
  --holding_;
  e.ctr.slots_held -= n;
  total_.slots_held -= n;
}

ClaimStep ClaimPool::on_claim(uint32_t entry, uint16_t child, uint32_t group, bool denied_below,
                              uint64_t now_ns) {
  Entry& e = entries_.at(entry);
  ClaimStep step;
  count(e, &PoolCounters::claims_in);
  if (child >= e.cfg.children) {
    count(e, &PoolCounters::drop_bad_child);
    step.action = ClaimAction::kDrop;
    step.drop = PoolDrop::kBadChild;
    return step;
  }
  if (group < e.released) {
    count(e, &PoolCounters::drop_stale_group);
    step.action = ClaimAction::kDrop;
    step.drop = PoolDrop::kStaleGroup;
    step.reason = Reason::kStale;
    return step;
  }

  auto [it, fresh] = e.groups.try_emplace(group);
  GroupView& g = it->second;
  if (fresh) {
    g.group = group;
    if (!denied_below) {
      const Reason r = reserve(e, g, now_ns);
      if (r != Reason::kNone) {
        g.denied = true;
        g.why = r;
      }
    }
  }
  const uint64_t bit = uint64_t{1} << child;
  step.duplicate = (g.claimed & bit) != 0;
  if (step.duplicate) count(e, &PoolCounters::claim_duplicates);
  g.claimed |= bit;
  // Until the verdict, a denial from below dooms the group: its slots here
  // are of no use and go back to the pool at once.
  if (!g.verdict_given && denied_below && !g.denied) {
    g.denied = true;
    g.why = Reason::kDeniedBelow;
    free_slots_of(e, g);
  }

  const uint64_t all = e.cfg.children == 64 ? ~uint64_t{0} : (uint64_t{1} << e.cfg.children) - 1;
  if (!g.verdict_given && g.claimed == all) {
    g.verdict_given = true;
    count_verdict(e, g);
    if (e.cfg.root) {
      g.has_answer = true;
      g.answer = g.denied ? Answer::kDenied : Answer::kGranted;
      g.reason = g.denied ? g.why : Reason::kNone;
    }
  }
  if (e.cfg.root ? !g.verdict_given : !g.verdict_given && !g.has_answer) {
    step.action = ClaimAction::kWait;
  } else if (e.cfg.root) {
    step.action = ClaimAction::kAnswer;
    step.answer = g.answer;
    step.reason = g.reason;
  } else {
    // Passed up once every child has claimed, or straight away once the
    // root's answer has passed down: children that heard it claim no more,
    // and one that missed it hears it again from the root.
    // The verdict once given; before it (an answer passed down first)
    // what this engine holds now. The root has decided and ignores it.
    step.action = ClaimAction::kPassUp;
    step.denied_below = g.verdict_given ? g.denied : g.denied || !g.holds;
    step.reason = !step.denied_below ? Reason::kNone : g.why != Reason::kNone ? g.why : Reason::kDeniedBelow;
  }
  return step;
}

bool ClaimPool::on_claim_result(uint32_t entry, uint32_t group, Answer answer) {
  Entry& e = entries_.at(entry);
  count(e, &PoolCounters::claim_results_in);
  if (e.cfg.root || group < e.released) return false;
  // Kept also for a group no child has claimed here yet: a claim that comes
  // later is passed straight up.
  auto [it, fresh] = e.groups.try_emplace(group);
  GroupView& g = it->second;
  if (fresh) g.group = group;
  g.has_answer = true;
  g.answer = answer;
  if (answer != Answer::kDenied || !g.holds) return false;
  free_slots_of(e, g);
  return true;
}

ReleaseStep ClaimPool::on_release(uint32_t entry, uint16_t child, uint32_t released, bool ask) {
  Entry& e = entries_.at(entry);
  ReleaseStep step;
  if (child >= e.cfg.children) {
    count(e, &PoolCounters::drop_bad_child);
    step.drop = PoolDrop::kBadChild;
    step.released = e.released;
    return step;
  }
  count(e, &PoolCounters::releases_in);
  if (released > e.child_released[child]) {  // counts only grow: an older one changes nothing
    e.child_released[child] = released;
    const uint32_t m = *std::min_element(e.child_released.begin(), e.child_released.end());
    if (m > e.released) {
      for (auto it = e.groups.begin(); it != e.groups.end() && it->first < m;) {
        free_slots_of(e, it->second);
        it = e.groups.erase(it);
      }
      e.ctr.released_groups += m - e.released;
      total_.released_groups += m - e.released;
      e.released = m;
      step.grew = true;
    }
  }
  step.released = e.released;
  if (!e.cfg.root) {
    if (ask) e.asked[child] = true;
  } else {
    step.confirm = step.grew ? ConfirmTo::kAll : ask ? ConfirmTo::kSender : ConfirmTo::kNone;
  }
  return step;
}

ConfirmStep ClaimPool::on_confirmation(uint32_t entry, uint32_t released) {
  Entry& e = entries_.at(entry);
  ConfirmStep step;
  if (released > e.confirmed_down) {
    e.confirmed_down = released;
    step.to = ConfirmTo::kAll;
  } else {
    for (uint16_t c = 0; c < e.asked.size(); ++c)
      if (e.asked[c]) step.children.push_back(c);
    if (!step.children.empty()) step.to = ConfirmTo::kListed;
  }
  e.asked.assign(e.asked.size(), false);
  return step;
}

SlotLookup ClaimPool::lookup(uint32_t entry, uint32_t seq) {
  Entry& e = entries_.at(entry);
  SlotLookup r;
  r.group = group_of(e, seq);
  if (r.group < e.released) {
    count(e, &PoolCounters::drop_stale_group);
    r.drop = PoolDrop::kStaleGroup;
    return r;
  }
  const auto it = e.groups.find(r.group);
  if (it != e.groups.end() && it->second.holds) {
    r.slot = it->second.slot + seq % e.cfg.group_size;
    return r;
  }
  count(e, &PoolCounters::drop_no_claim);
  r.drop = PoolDrop::kNoClaim;
  if (e.cfg.root && it != e.groups.end() && it->second.has_answer) {
    r.has_answer = true;
    r.answer = it->second.answer;
    r.reason = it->second.reason;
  }
  return r;
}

void ClaimPool::renew(uint32_t entry, uint32_t seq, uint64_t now_ns) {
  Entry& e = entries_.at(entry);
  const auto it = e.groups.find(group_of(e, seq));
  if (it != e.groups.end() && it->second.holds) it->second.deadline = now_ns + cfg_.lease_ns;
}

SlotLookup ClaimPool::on_contribution(uint32_t entry, uint32_t seq, uint64_t now_ns) {
  const SlotLookup r = lookup(entry, seq);
  if (r.drop == PoolDrop::kNone) renew(entry, seq, now_ns);
  return r;
}

void ClaimPool::on_emitted(uint32_t entry, uint32_t seq) {
  Entry& e = entries_.at(entry);
  const auto it = e.groups.find(group_of(e, seq));
  if (it != e.groups.end()) it->second.emitted = true;
}

std::vector<PoolExpiry> ClaimPool::advance(uint64_t now_ns) {
  std::vector<PoolExpiry> out;
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    for (auto& [index, g] : e.groups) {
      if (!g.holds || g.emitted || now_ns < g.deadline) continue;
      free_slots_of(e, g);
      g.expired = true;
      count(e, &PoolCounters::expired);
      if (!g.verdict_given) {  // a group holding slots has no denial yet
        g.denied = true;
        g.why = Reason::kExpired;
      }
      if (e.cfg.root) {
        if (!g.verdict_given) {
          g.verdict_given = true;
          count_verdict(e, g);
        }
        g.has_answer = true;
        g.answer = Answer::kDenied;
        g.reason = Reason::kExpired;
      }
      out.push_back({i, index});
    }
  }
  return out;
}

std::optional<GroupView> ClaimPool::group(uint32_t entry, uint32_t group) const {
  const Entry& e = entries_.at(entry);
  const auto it = e.groups.find(group);
  if (it == e.groups.end()) return std::nullopt;
  return it->second;
}

std::vector<GroupView> ClaimPool::groups(uint32_t entry) const {
  std::vector<GroupView> out;
  for (const auto& [index, g] : entries_.at(entry).groups) out.push_back(g);
  return out;
}

bool ClaimPool::slot_free(uint32_t slot) const {
  if (slot < cfg_.base || slot - cfg_.base >= cfg_.size)
    throw std::out_of_range("claim pool: slot outside the pool");
  return !used_[slot - cfg_.base];
}

}  // namespace panama::pswitch
