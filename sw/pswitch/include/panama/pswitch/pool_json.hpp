// The pool's counters as JSON, as the software PSwitch and the network
// simulation report them (docs/pswitch.md, "The pool").
#pragma once

#include <nlohmann/json.hpp>

#include "panama/pswitch/claim_pool.hpp"
#include "panama/pswitch/switch_core.hpp"

namespace panama::pswitch {

// The pool's counters of one tree, or summed: the switch's (frames, claim
// entries) and the pool's (claims, verdicts, leases, drops).
nlohmann::json pool_counters_json(const PoolSwitchCounters& sc, const PoolCounters& pc);

}  // namespace panama::pswitch
