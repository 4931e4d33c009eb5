// Job plan parsing: defaults, round trip through plan_to_json, and a clear
// error naming the origin and the key for each kind of bad plan (the wording
// of panama/config/json_reader.hpp).
#include <catch2/catch.hpp>
#include <string>

#include "panama/runtime/plan_file.hpp"

using namespace panama::runtime;

namespace {

const char* kMinimal = R"({
  "job_id": 7, "rank": 1, "world_size": 4,
  "local_mac": "02:00:00:00:01:01", "local_ip": "10.0.1.2",
  "trees": [
    {"tree_id": 0, "child_id": 1, "dst_mac": "02:00:00:00:00:fe", "dst_ip": "10.0.0.254"},
    {"tree_id": 3, "child_id": 5, "dst_mac": "02:00:00:00:00:fd", "dst_ip": "10.0.0.253", "initial_cwnd_cap": 4}
  ]
})";

std::string error_of(const std::string& text) {
  try {
    parse_plan(text);
  } catch (const PlanError& e) {
    return e.what();
  }
  return "<no error>";
}

std::string error_of_origin(const std::string& text, const std::string& origin) {
  try {
    parse_plan(text, origin);
  } catch (const PlanError& e) {
    return e.what();
  }
  return "<no error>";
}

// kMinimal with one textual substitution.
std::string with(const std::string& from, const std::string& to) {
  std::string s = kMinimal;
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("plan: required keys parsed, documented defaults applied") {
  const Plan p = parse_plan(kMinimal);
  CHECK(p.job_id == 7);
  CHECK(p.rank == 1);
  CHECK(p.world_size == 4);
  CHECK(p.udp_port == 9600);
  CHECK(p.elems_per_packet == 256);
  CHECK(p.local_mac == MacAddress{0x02, 0, 0, 0, 0x01, 0x01});
  CHECK(p.local_ip == ((10u << 24) | (0u << 16) | (1u << 8) | 2u));
  REQUIRE(p.trees.size() == 2);
  CHECK(p.trees[0].initial_cwnd_cap == 8);
  CHECK(p.trees[1].tree_id == 3);
  CHECK(p.trees[1].child_id == 5);
  CHECK(p.trees[1].initial_cwnd_cap == 4);
  CHECK(p.trees[1].dst_mac == MacAddress{0x02, 0, 0, 0, 0, 0xfd});
  CHECK(p.congestion.g == 1.0 / 16);
  CHECK(p.congestion.retry_budget == 20);
}

TEST_CASE("plan: plan_to_json round-trips every field") {
  Plan p = parse_plan(kMinimal);
  p.device = "net_memif0";
  p.elems_per_packet = 1024;
  p.dscp = 10;
  p.congestion.g = 0.25;
  p.congestion.rto_max_us = 12345;
  p.congestion.failover_after = 9;
  TreePlan backup = p.trees[0];
  backup.tree_id = 200;
  backup.backup_for = p.trees[0].tree_id;
  p.trees.push_back(backup);
  const Plan q = parse_plan(plan_to_json(p));
  CHECK(q == p);
  CHECK(q.trees.back().backup_for == p.trees[0].tree_id);
}

TEST_CASE("plan: bad plans give an error naming the key") {
  CHECK_THAT(error_of("{"), Catch::StartsWith("plan: invalid JSON: "));
  CHECK_THAT(error_of("[]"),
             Catch::Equals("plan: (top level): wrong type: expected an object, got [] (array)"));
  CHECK_THAT(error_of(with("\"job_id\": 7,", "")), Catch::Equals("plan: job_id: missing key"));
  CHECK_THAT(error_of(with("\"job_id\": 7", "\"job_id\": 70000")),
             Catch::Equals("plan: job_id: out of range: 70000 is not in 0..65535"));
  CHECK_THAT(error_of(with("\"rank\": 1", "\"rank\": 4")),
             Catch::StartsWith("plan: rank: must be below world_size"));
  CHECK_THAT(error_of(with("\"rank\": 1", "\"rank\": -1")), Catch::Contains("rank: out of range"));
  CHECK_THAT(error_of(with("\"rank\": 1", "\"rank\": \"1\"")),
             Catch::Contains("rank: wrong type: expected an integer"));
  CHECK_THAT(error_of(with("02:00:00:00:01:01", "02:00:00:00:01")),
             Catch::Contains("local_mac: bad MAC address"));
  CHECK_THAT(error_of(with("10.0.1.2", "10.0.1.256")), Catch::Contains("local_ip: bad IPv4 address"));
  CHECK_THAT(error_of(with("10.0.1.2", "10.0.1")), Catch::Contains("local_ip: bad IPv4 address"));
  CHECK_THAT(error_of(with("\"child_id\": 5", "\"child_id\": 64")),
             Catch::Contains("trees[1].child_id: out of range"));
  CHECK_THAT(error_of(with("\"tree_id\": 3", "\"tree_id\": 0")),
             Catch::Contains("trees[1].tree_id: duplicate"));
  CHECK_THAT(error_of(with("\"initial_cwnd_cap\": 4", "\"initial_cwnd_cap\": 0")),
             Catch::Contains("trees[1].initial_cwnd_cap: out of range"));
  CHECK_THAT(error_of(with("\"world_size\": 4,", "\"world_size\": 4, \"wrold\": 1,")),
             Catch::StartsWith("plan: wrold: unknown key (known keys here: job_id, rank, world_size,"));
  CHECK_THAT(error_of(with("\"world_size\": 4,", "\"world_size\": 4, \"elems_per_packet\": 2289,")),
             Catch::Contains("elems_per_packet: out of range"));
  CHECK_THAT(error_of(with("\"world_size\": 4,", "\"world_size\": 4, \"congestion\": {\"g\": 2},")),
             Catch::Contains("congestion.g: out of range"));
  CHECK_THAT(error_of(with("\"world_size\": 4,",
                           "\"world_size\": 4, \"congestion\": {\"rto_min_us\": 9, \"rto_max_us\": 8},")),
             Catch::Contains("congestion.rto_min_us"));
  CHECK_THAT(error_of(R"({"job_id": 1, "rank": 0, "world_size": 1, "local_mac": "02:00:00:00:00:01",
                             "local_ip": "10.0.0.1", "trees": []})"),
             Catch::Contains("trees: at least one tree"));
}

TEST_CASE("plan: load_plan reports a missing file with its path") {
  try {
    load_plan("/nonexistent/plan.json");
    FAIL("no error");
  } catch (const PlanError& e) {
    CHECK_THAT(std::string(e.what()),
               Catch::Equals("/nonexistent/plan.json: cannot open: No such file or directory"));
  }
}

TEST_CASE("plan: an origin names the plan in every error") {
  CHECK_THAT(error_of_origin(with("\"child_id\": 5", "\"child_id\": 64"), "w3.plan.json"),
             Catch::Equals("w3.plan.json: trees[1].child_id: out of range: 64 is not in 0..63"));
  CHECK_THAT(error_of_origin(with("\"rank\": 1", "\"rank\": 4"), "w3.plan.json"),
             Catch::StartsWith("w3.plan.json: rank: must be below world_size"));
}

TEST_CASE("plan: pooled mode is parsed, defaulted, round-tripped and checked") {
  const std::string pooled =
      R"("pooled": {"group_size": 8, "next_mac": "02:00:00:00:01:02", "next_ip": "10.0.1.3",
                    "prev_mac": "02:00:00:00:01:00", "prev_ip": "10.0.1.1"},)";
  // The pooled plan with `extra` keys after group_size.
  auto pooled_with = [&](const std::string& extra) {
    std::string text = with("\"world_size\": 4,", "\"world_size\": 4, " + pooled);
    const std::string key = "\"group_size\": 8";
    return extra.empty() ? text : text.replace(text.find(key), key.size(), key + ", " + extra);
  };
  const Plan p = parse_plan(pooled_with(""));
  REQUIRE(p.pooled);
  CHECK(p.pooled->group_size == 8);
  CHECK(p.pooled->next_mac == MacAddress{0x02, 0, 0, 0, 0x01, 0x02});
  CHECK(p.pooled->next_ip == ((10u << 24) | (1u << 8) | 3u));
  CHECK(p.pooled->prev_ip == ((10u << 24) | (1u << 8) | 1u));
  CHECK(p.pooled->ring_port == 0);
  CHECK(ring_udp_port(p) == 9601);  // the PANAMA port + 1 by default
  CHECK(p.pooled->ring_window == 64);
  CHECK_FALSE(p.pooled->ring_congestion);  // a fixed ring window unless asked for
  // No ring position: the ring is in rank order, and none is written.
  CHECK(!p.pooled->ring_position);
  CHECK(ring_position(p) == p.rank);
  CHECK(plan_to_json(p).find("ring_position") == std::string::npos);
  CHECK(parse_plan(plan_to_json(p)) == p);
  Plan q = p;
  q.pooled->ring_port = 7000;
  q.pooled->ring_window = 5;
  q.pooled->ring_position = 3;
  q.pooled->ring_congestion = true;
  CHECK(ring_udp_port(q) == 7000);
  CHECK(ring_position(q) == 3);
  CHECK(parse_plan(plan_to_json(q)) == q);
  CHECK(!(q == p));
  q.pooled->ring_position = 0;  // written and read back although it is 0
  CHECK(parse_plan(plan_to_json(q)).pooled->ring_position == std::optional<uint32_t>(0));
  CHECK(ring_position(parse_plan(pooled_with("\"ring_position\": 2"))) == 2);
  // A plan without it is what it was: no pooled key written, none read.
  CHECK(!parse_plan(kMinimal).pooled);
  CHECK(plan_to_json(parse_plan(kMinimal)).find("pooled") == std::string::npos);
  CHECK(ring_udp_port(parse_plan(kMinimal)) == 0);

  auto bad = [&](const std::string& from, const std::string& to) {
    std::string text = with("\"world_size\": 4,", "\"world_size\": 4, " + pooled);
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return error_of(text.replace(at, from.size(), to));
  };
  CHECK_THAT(bad("\"group_size\": 8", "\"group_size\": 0"),
             Catch::Contains("pooled.group_size: out of range"));
  CHECK_THAT(bad("\"group_size\": 8", "\"group_size\": 513"),
             Catch::Contains("pooled.group_size: out of range"));
  CHECK_THAT(bad("\"group_size\": 8,", ""), Catch::Contains("pooled.group_size: missing key"));
  CHECK_THAT(bad("\"next_ip\": \"10.0.1.3\",", ""), Catch::Contains("pooled.next_ip: missing key"));
  CHECK_THAT(bad("02:00:00:00:01:00", "02:00:00"), Catch::Contains("pooled.prev_mac: bad MAC address"));
  CHECK_THAT(bad("\"group_size\": 8", "\"group_size\": 8, \"ring_port\": 9600"),
             Catch::Contains("pooled.ring_port: must differ from udp_port"));
  CHECK_THAT(bad("\"group_size\": 8", "\"group_size\": 8, \"ring_window\": 0"),
             Catch::Contains("pooled.ring_window: out of range"));
  CHECK_THAT(bad("\"group_size\": 8", "\"group_size\": 8, \"ring_congestion\": 1"),
             Catch::Contains("pooled.ring_congestion"));
  CHECK(parse_plan(pooled_with("\"ring_congestion\": true")).pooled->ring_congestion);
  CHECK_THAT(bad("\"group_size\": 8", "\"group_size\": 8, \"ring_position\": 4"),
             Catch::Contains("pooled.ring_position: must be below world_size (4 >= 4)"));
  CHECK_THAT(bad("\"group_size\": 8", "\"group_size\": 8, \"ring_position\": -1"),
             Catch::Contains("pooled.ring_position: out of range"));
  CHECK_THAT(bad("\"group_size\": 8", "\"group_size\": 8, \"grup\": 1"),
             Catch::Contains("pooled.grup: unknown key"));
  CHECK_THAT(bad("\"world_size\": 4,", "\"world_size\": 4, \"udp_port\": 65535,"),
             Catch::Contains("pooled.ring_port: required when udp_port is 65535"));
  CHECK_THAT(bad("\"initial_cwnd_cap\": 4", "\"initial_cwnd_cap\": 4, \"backup_for\": 0"),
             Catch::Contains("trees[1].backup_for: a pooled job has no backup trees"));
}

TEST_CASE("plan: a pooled plan built in code is checked too") {
  Plan p = parse_plan(kMinimal);
  p.pooled = PooledPlan{};
  p.pooled->group_size = 4;
  p.pooled->prev_ip = 1;
  auto error = [](const Plan& q) -> std::string {
    try {
      validate_plan(q);
    } catch (const PlanError& e) {
      return e.what();
    }
    return "<no error>";
  };
  CHECK_THAT(error(p), Catch::Equals("pooled.next_ip: required (the ring neighbours' addresses)"));
  p.pooled->next_ip = 2;
  CHECK(error(p) == "<no error>");
  p.pooled->group_size = 0;
  CHECK_THAT(error(p), Catch::Equals("pooled.group_size: out of range [1, 512]"));
  p.pooled->group_size = 4;
  p.pooled->ring_port = p.udp_port;
  CHECK_THAT(error(p), Catch::StartsWith("pooled.ring_port: must differ from udp_port"));
  p.pooled->ring_port = 0;
  p.pooled->ring_position = p.world_size;
  CHECK_THAT(error(p), Catch::StartsWith("pooled.ring_position: must be below world_size"));
  p.pooled->ring_position = p.world_size - 1;
  CHECK(error(p) == "<no error>");
  p.pooled->ring_position.reset();
  // A single worker is its own ring neighbour: no addresses needed.
  p.pooled->ring_port = 0;
  p.world_size = 1;
  p.rank = 0;
  p.pooled->next_ip = p.pooled->prev_ip = 0;
  CHECK(error(p) == "<no error>");
}
