// A pooled worker's groups and ring traffic (runtime::PoolStats,
// docs/runtime.md, "Pooled mode") as JSON: one spelling for panama-cluster's
// worker reports and panama-netsim's summary.
#pragma once

#include <nlohmann/json.hpp>

#include "panama/runtime/allreduce_core.hpp"

namespace panama::cluster {

inline nlohmann::json pool_stats_json(const runtime::PoolStats& p) {
  return {{"groups", p.groups},
          {"claimed", p.claimed},
          {"claims_sent", p.claims_sent},
          {"claim_timeouts", p.claim_timeouts},
          {"granted", p.granted},
          {"denied", p.denied},
          {"expired", p.expired},
          {"denied_by_peer", p.denied_by_peer},
          {"in_network", p.in_network},
          {"on_ring", p.on_ring},
          {"answers_ignored", p.answers_ignored},
          {"denied_after_result", p.denied_after_result},
          {"releases_sent", p.releases_sent},
          {"release_asks", p.release_asks},
          {"confirmations", p.confirmations},
          {"confirmed", p.confirmed},
          {"released", p.released},
          {"ring_frames_sent", p.ring_frames_sent},
          {"ring_retransmissions", p.ring_retransmissions},
          {"ring_bytes_sent", p.ring_bytes_sent},
          {"ring_acks_sent", p.ring_acks_sent},
          {"ring_acks_received", p.ring_acks_received},
          {"ring_frames_received", p.ring_frames_received},
          {"ring_duplicates", p.ring_duplicates},
          {"ring_early", p.ring_early},
          {"ring_malformed", p.ring_malformed},
          {"ring_ce_received", p.ring_ce_received},
          {"ring_ce_echoes", p.ring_ce_echoes}};
}

}  // namespace panama::cluster
