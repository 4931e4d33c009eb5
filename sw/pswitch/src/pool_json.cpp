#include "panama/pswitch/pool_json.hpp"

#include "panama/claim.hpp"

namespace panama::pswitch {

// The pool's counters of one tree, or summed: the switch's (frames, claim
// entries) and the pool's (claims, verdicts, leases, drops).
nlohmann::json pool_counters_json(const PoolSwitchCounters& sc, const PoolCounters& pc) {
  nlohmann::json denied = nlohmann::json::object();
  for (uint8_t r = 1; r < claim::kReasonCount; ++r) {
    if (pc.denied[r] > 0) denied[claim::reason_name(static_cast<claim::Reason>(r))] = pc.denied[r];
  }
  return {{"claims_in", sc.claims_in},
          {"claims_up", sc.claims_up},
          {"answers_down", sc.answers_down},
          {"claim_results_in", sc.claim_results_in},
          {"releases_in", sc.releases_in},
          {"releases_up", sc.releases_up},
          {"confirmations_down", sc.confirmations_down},
          {"mapped", sc.mapped},
          {"counted", sc.counted},
          {"no_claim_answers", sc.no_claim_answers},
          {"emissions", sc.emissions},
          {"entry_commits", sc.entry_commits},
          {"entry_disables", sc.entry_disables},
          {"commit_failures", sc.commit_failures},
          {"unmapped", sc.unmapped},
          {"claim_duplicates", pc.claim_duplicates},
          {"granted", pc.granted},
          {"denied", denied},
          {"reservations", pc.reservations},
          {"expired", pc.expired},
          {"released_groups", pc.released_groups},
          {"drop_no_claim", pc.drop_no_claim},
          {"drop_stale_group", pc.drop_stale_group},
          {"drop_bad_child", pc.drop_bad_child},
          {"slots_held", pc.slots_held},
          {"slots_high_water", pc.slots_high_water}};
}

}  // namespace panama::pswitch
