// Job plan files: the JSON text the controller writes for each worker
// (docs/runtime.md, "Job plan") and the runtime reads. parse_plan checks
// every key and reports the first problem with its path, so a bad plan never
// reaches the datapath. Addresses use the node configuration's rules
// (panama::config::parse_mac / parse_ipv4 / format_mac / format_ipv4).
#pragma once

#include <string>

#include "panama/runtime/plan.hpp"

namespace panama::runtime {

// Parses and validates a plan from JSON text; `origin` (a file name, or what
// the text is) starts every error message, as for every JSON input
// (panama/config/json_reader.hpp): "plan: trees[1].child_id: out of range: 64
// is not in 0..63". Throws PlanError.
Plan parse_plan(const std::string& json_text, const std::string& origin = "plan");
// Reads and parses a plan file; errors name the file. Throws PlanError (also
// for I/O errors).
Plan load_plan(const std::string& path);
// Serialises a plan (every key, defaults included) as pretty JSON; parse_plan
// of the result gives back an equal plan. Used by the controller.
std::string plan_to_json(const Plan& plan);

}  // namespace panama::runtime
