// panamactl: an xbutil-style tool for PANAMA engines. Every command works on
// a card (xrt:<n>) and on the simulation backend (sim, sim:rtl, sim:model)
// alike; the simulation keeps its state in a file between commands.
#include "panamactl_cli.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <bitset>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "panama/config/node_config.hpp"
#include "panama/driver/cmac.hpp"
#include "panama/driver/device.hpp"
#include "panama/driver/register_port.hpp"
#include "panama/driver/simulation.hpp"
#include "panama/driver/xclbin.hpp"
#include "panama/engine/counters.hpp"
#include "panama/pcap/pcap_file.hpp"
#include "panama/regmap.hpp"

namespace panama::driver {

namespace {

// The element types of an ELEM_TYPES mask, by name.
std::vector<std::string> elem_type_names(uint32_t mask) {
  std::vector<std::string> names;
  const char* const kNames[] = {"", "fp32", "bf16", "fp16"};
  for (uint32_t t = 1; t <= 3; ++t) {
    if ((mask >> t) & 1u) names.emplace_back(kNames[t]);
  }
  return names;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string default_sim_state() {
  const char* run = std::getenv("XDG_RUNTIME_DIR");
  if (run && *run) return std::string(run) + "/panama-sim.state";
  return "/tmp/panama-sim-" + std::to_string(::getuid()) + ".state";
}

struct Options {
  std::string device;
  std::string sim_state;
  bool json = false;
};

std::unique_ptr<Device> open(const Options& o, OpenMode mode) {
  OpenOptions oo;
  oo.mode = mode;
  oo.sim_state = o.sim_state == "none" ? std::string() : o.sim_state;
  return open_device(o.device, oo);
}

std::string image_text(const std::optional<XclbinInfo>& x) {
  if (!x) return "none";
  const auto k = x->panama_kernel();
  return uuid_to_string(x->uuid) + " " + x->platform + (k ? " " + k->kernel + ":" + k->compute_unit : "");
}

void cmd_list(const Options& o, std::ostream& out) {
  std::string note;
  const auto devices = list_devices(&note);
  if (o.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& d : devices) j.push_back({{"device", d.spec}, {"description", d.description}});
    nlohmann::json doc = {{"devices", j}};
    if (!note.empty()) doc["note"] = note;
    out << doc.dump(2) << "\n";
    return;
  }
  for (const auto& d : devices) out << fmt::format("{:<10} {}\n", d.spec, d.description);
  if (!note.empty()) out << "note: " << note << "\n";
}

void cmd_status(const Options& o, std::ostream& out) {
  auto dev = open(o, OpenMode::kReadOnly);
  const std::string desc = dev->description();
  const auto image = dev->loaded_xclbin();
  const Status s = dev->status();
  const Identity& id = s.identity;
  if (o.json) {
    nlohmann::json j = {{"device", dev->spec()},
                        {"description", desc},
                        {"id", fmt::format("0x{:08X}", id.id)},
                        {"version", fmt::format("{}.{}", id.version_major, id.version_minor)},
                        {"num_entries", id.num_entries},
                        {"num_slots", id.num_slots},
                        {"slot_elems", id.slot_elems},
                        {"elem_types", elem_type_names(id.elem_types)},
                        {"enabled", s.enabled},
                        {"udp_port", s.udp_port}};
    j["image"] = image ? nlohmann::json(image_text(image)) : nlohmann::json(nullptr);
    out << j.dump(2) << "\n";
    return;
  }
  out << fmt::format("{:<12} {}\n", "device", dev->spec());
  out << fmt::format("{:<12} {}\n", "backend", desc);
  out << fmt::format("{:<12} {}\n", "image", image_text(image));
  out << fmt::format("{:<12} PNMA (0x{:08X}), register map {}.{}\n", "identity", id.id, id.version_major,
                     id.version_minor);
  out << fmt::format("{:<12} {} table entries, {} slots of {} elements\n", "capacity", id.num_entries,
                     id.num_slots, id.slot_elems);
  out << fmt::format("{:<12} {}\n", "elem types", fmt::join(elem_type_names(id.elem_types), ", "));
  out << fmt::format("{:<12} {}, UDP port {}\n", "engine", s.enabled ? "enabled" : "disabled (pass-through)",
                     s.udp_port);
}

void print_counters(Device& dev, const std::vector<config::EntryConfig>& entries, bool json, bool watching,
                    std::ostream& out) {
  const config::CounterSnapshot snap = config::read_counters(dev, entries);
  if (json) {
    nlohmann::json j = config::counters_to_json(snap);
    j["device"] = dev.spec();
    if (watching) j["time"] = static_cast<int64_t>(std::time(nullptr));
    out << (watching ? j.dump() : j.dump(2)) << "\n";
  } else {
    if (watching) {
      const std::time_t now = std::time(nullptr);
      char when[32];
      std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
      out << "--- " << dev.spec() << " at " << when << " ---\n";
    }
    out << config::format_counters_table(snap);
  }
  out.flush();
}

struct LinkOptions {
  unsigned cage = 0;
  std::string rsfec, loopback, sim_cable, sim_peer_rsfec;
  bool self_test = false;
  double wait = 5.0;
};

std::string lanes(uint32_t bits) {
  return std::to_string(std::bitset<20>(bits & cmac::kAllPcsLanes).count()) + "/20";
}

std::string rx_status_text(uint32_t v) {
  static const char* names[] = {
      "status",       "aligned",     "misaligned",           "aligned_err",         "hi_ber",
      "remote_fault", "local_fault", "internal_local_fault", "received_local_fault"};
  std::string t;
  for (int i = 0; i < 9; ++i) {
    if (v & (1u << i)) t += (t.empty() ? "" : " ") + std::string(names[i]);
  }
  return t.empty() ? "none" : t;
}

// Polls until the link is up or `wait` seconds have passed (the CMAC needs
// some milliseconds to lock and align after a change; the simulation none).
cmac::LinkStatus settle(RegisterPort& mac, double wait) {
  cmac::LinkStatus st = cmac::read_status(mac);
  for (double waited = 0; !st.up() && waited < wait; waited += 0.1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    st = cmac::read_status(mac);
  }
  return st;
}

void print_link(const std::string& spec, unsigned cage, const cmac::LinkStatus& st, bool json,
                const std::string& self_test, std::ostream& out) {
  const cmac::Counters& c = st.counters;
  if (json) {
    nlohmann::json j = {{"device", spec},
                        {"cage", cage},
                        {"up", st.up()},
                        {"verdict", st.verdict()},
                        {"rx_status", fmt::format("0x{:08X}", st.rx_status)},
                        {"rx_status_bits", rx_status_text(st.rx_status)},
                        {"tx_local_fault", (st.tx_status & 1) != 0},
                        {"block_lock_lanes", std::bitset<20>(st.block_lock & cmac::kAllPcsLanes).count()},
                        {"lane_sync_lanes", std::bitset<20>(st.lane_sync & cmac::kAllPcsLanes).count()},
                        {"rsfec", st.rsfec_on()},
                        {"rsfec_status", fmt::format("0x{:08X}", st.rsfec_status)},
                        {"loopback", st.near_end_loopback()},
                        {"core_version", fmt::format("0x{:08X}", st.core_version)},
                        {"counters",
                         {{"rx_packets", c.rx_packets},
                          {"rx_good_packets", c.rx_good_packets},
                          {"rx_bad_fcs", c.rx_bad_fcs},
                          {"tx_packets", c.tx_packets},
                          {"tx_good_packets", c.tx_good_packets},
                          {"rsfec_corrected", c.rsfec_corrected},
                          {"rsfec_uncorrected", c.rsfec_uncorrected}}}};
    if (!self_test.empty()) j["self_test"] = self_test;
    out << j.dump(2) << "\n";
    return;
  }
  out << fmt::format("{:<12} {}, QSFP28 cage {}\n", "device", spec, cage);
  out << fmt::format("{:<12} {}\n", "link", st.up() ? "up" : "down");
  out << fmt::format("{:<12} 0x{:08X} ({}); TX local fault {}\n", "rx status", st.rx_status,
                     rx_status_text(st.rx_status), (st.tx_status & 1) ? "yes" : "no");
  out << fmt::format("{:<12} block lock {} PCS lanes, lane sync {}\n", "lanes", lanes(st.block_lock),
                     lanes(st.lane_sync));
  out << fmt::format("{:<12} {} (RSFEC_CONFIG_ENABLE 0x{:X}, STAT_RSFEC_STATUS_REG 0x{:08X})\n", "rs-fec",
                     st.rsfec_on() ? "on" : "off", st.rsfec_enable, st.rsfec_status);
  out << fmt::format("{:<12} {}\n", "loopback", st.near_end_loopback() ? "near-end PMA" : "off");
  out << fmt::format("{:<12} rx {} frames ({} good, {} bad FCS), tx {} frames ({} good)\n", "counters",
                     c.rx_packets, c.rx_good_packets, c.rx_bad_fcs, c.tx_packets, c.tx_good_packets);
  out << fmt::format("{:<12} corrected {}, uncorrectable {} codewords\n", "rs-fec cw", c.rsfec_corrected,
                     c.rsfec_uncorrected);
  if (!self_test.empty()) out << fmt::format("{:<12} {}\n", "self-test", self_test);
  out << fmt::format("{:<12} {}\n", "verdict", st.verdict());
}

// Exit status: 0 link up (self-test passed), 3 link down (self-test failed).
int cmd_link(const Options& o, const LinkOptions& l, std::ostream& out) {
  auto dev = open(o, OpenMode::kControl);
  if (!l.sim_cable.empty() || !l.sim_peer_rsfec.empty()) {
    auto* sim = dynamic_cast<SimulationDevice*>(dev.get());
    if (!sim) {
      throw DriverError(ErrorKind::kUnsupported,
                        "--sim-cable and --sim-peer-rsfec set the simulated far end (-d sim) only");
    }
    if (!l.sim_cable.empty()) sim->set_sim_cable(l.cage, l.sim_cable == "connected");
    if (!l.sim_peer_rsfec.empty()) sim->set_sim_peer_rsfec(l.cage, l.sim_peer_rsfec == "on");
  }
  RegisterPort& mac = dev->cmac(l.cage);
  bool changed = false;
  if (!l.rsfec.empty()) {
    cmac::set_rsfec(mac, l.rsfec == "on");
    changed = true;
  }
  if (!l.loopback.empty()) {
    cmac::set_loopback(mac, l.loopback == "on");
    changed = true;
  }
  std::string self_test;
  cmac::LinkStatus st;
  if (l.self_test) {
    const bool was_looped = cmac::read_status(mac).near_end_loopback();
    cmac::set_loopback(mac, true);
    st = settle(mac, l.wait);
    self_test = st.up() ? "passed: the link comes up in near-end loopback (MAC, transceivers and their "
                          "reference clock work; cable and switch not tested)"
                        : "FAILED: no link even in near-end loopback";
    if (!was_looped) cmac::set_loopback(mac, false);
  } else {
    st = changed ? settle(mac, l.wait) : cmac::read_status(mac);
  }
  print_link(dev->spec(), l.cage, st, o.json, self_test, out);
  return st.up() ? 0 : 3;
}
}  // namespace

int panamactl_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "panamactl: program, configure and inspect PANAMA aggregation engines on Alveo cards (XRT) "
      "or in simulation",
      "panamactl"};
  app.require_subcommand(1);
  app.fallthrough();  // -d and --sim-state also after the command, as with xbutil
  Options o;
  o.device = env_or("PANAMA_DEVICE", "xrt:0");
  o.sim_state = env_or("PANAMA_SIM_STATE", default_sim_state());
  app.add_option("-d,--device", o.device,
                 "xrt:<index>, xrt:<bdf>, sim (RTL engine when built, else the model), sim:rtl or sim:model "
                 "[env PANAMA_DEVICE]")
      ->capture_default_str();
  app.add_option("--sim-state", o.sim_state,
                 "file that keeps a simulated engine's state between commands, or \"none\" "
                 "[env PANAMA_SIM_STATE]")
      ->capture_default_str();

  auto* list = app.add_subcommand("list", "list the cards XRT sees and the simulation backends");
  list->add_flag("--json", o.json, "JSON output");

  auto* status = app.add_subcommand("status", "show identity, capacity, state and loaded image");
  status->add_flag("--json", o.json, "JSON output");

  std::string xclbin;
  auto* program = app.add_subcommand("program", "load an xclbin and check the engine's identity");
  program->add_option("xclbin", xclbin, "the .xclbin file")->required()->check(CLI::ExistingFile);

  std::string config_path;
  auto* apply = app.add_subcommand("apply", "apply a node configuration file (entries, shares, addresses)");
  apply->add_option("config", config_path, "node configuration JSON (docs/configuration.md)")
      ->required()
      ->check(CLI::ExistingFile);

  double interval = 1.0;
  unsigned count = 0;
  bool watch = false;
  auto* counters = app.add_subcommand("counters", "show the engine's counters");
  counters->add_flag("--json", o.json, "JSON output (one document per line when watching)");
  counters->add_option("-c,--config", config_path, "node configuration: adds its entries' counters")
      ->check(CLI::ExistingFile);
  counters->add_flag("-w,--watch", watch, "refresh until interrupted (or --count times)");
  counters->add_option("--interval", interval, "seconds between refreshes when watching")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  counters->add_option("--count", count, "refreshes when watching (0: until interrupted)")
      ->capture_default_str();

  auto* clear = app.add_subcommand("clear", "zero every counter");
  auto* reset = app.add_subcommand("reset", "disable every entry, empty every slot, zero every counter");
  auto* enable = app.add_subcommand("enable", "aggregate PANAMA frames (CONTROL.ENABLE = 1)");
  auto* disable = app.add_subcommand("disable", "pass every frame through untouched (CONTROL.ENABLE = 0)");

  std::string pcap_in, pcap_out;
  auto* send =
      app.add_subcommand("send", "simulation only: run the frames of a pcap file through the engine");
  send->add_option("pcap", pcap_in, "input capture (Ethernet)")->required()->check(CLI::ExistingFile);
  send->add_option("-o,--out", pcap_out, "write the frames the engine sends to this capture");

  LinkOptions link_opts;
  auto* link = app.add_subcommand(
      "link", "100G link of a QSFP28 cage: CMAC status and counters, RS-FEC, near-end loopback self-test");
  link->add_flag("--json", o.json, "JSON output");
  link->add_option("--port", link_opts.cage, "QSFP28 cage (CMAC kernel cmac_<n>)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1u));
  link->add_option("--rsfec", link_opts.rsfec, "turn RS-FEC on or off (must match the switch port)")
      ->check(CLI::IsMember({"on", "off"}));
  link->add_option("--loopback", link_opts.loopback, "near-end GT (PMA) loopback on or off")
      ->check(CLI::IsMember({"on", "off"}));
  link->add_flag(
      "--self-test", link_opts.self_test,
      "loop the transceivers back on themselves, check the link comes up, restore; no switch needed");
  link->add_option("--wait", link_opts.wait, "seconds to wait for the link after a change")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 60.0));
  link->add_option("--sim-cable", link_opts.sim_cable, "simulation only: the simulated cable")
      ->check(CLI::IsMember({"connected", "unplugged"}));
  link->add_option("--sim-peer-rsfec", link_opts.sim_peer_rsfec,
                   "simulation only: RS-FEC of the simulated switch port")
      ->check(CLI::IsMember({"on", "off"}));

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? 0 : 2;
  }

  int rc = 0;
  try {
    if (*list) {
      cmd_list(o, out);
    } else if (*link) {
      rc = cmd_link(o, link_opts, out);
    } else if (*status) {
      cmd_status(o, out);
    } else if (*program) {
      auto dev = open(o, OpenMode::kControl);
      dev->program(xclbin);
      const Identity id = dev->identity();
      out << fmt::format("{}: programmed {} ({}), engine {}.{} with {} entries and {} slots\n", dev->spec(),
                         xclbin, image_text(dev->loaded_xclbin()), id.version_major, id.version_minor,
                         id.num_entries, id.num_slots);
    } else if (*apply) {
      const config::NodeConfig cfg = config::load_node_config(config_path);
      auto dev = open(o, OpenMode::kControl);
      dev->apply(cfg);
      uint32_t slots = 0;
      for (const auto& e : cfg.entries) slots += e.slot_count;
      out << fmt::format("{}: applied node {}: {} entries, {} slots, UDP port {}; verified by read-back\n",
                         dev->spec(), cfg.node, cfg.entries.size(), slots, cfg.engine.udp_port);
    } else if (*counters) {
      std::vector<config::EntryConfig> entries;
      if (!config_path.empty()) entries = config::load_node_config(config_path).entries;
      if (!watch) {
        auto dev = open(o, OpenMode::kReadOnly);
        print_counters(*dev, entries, o.json, false, out);
      } else {
        // Reopen on every refresh: a simulated engine's state changes in
        // other processes, and a card may be reprogrammed meanwhile.
        for (unsigned i = 0; count == 0 || i < count; ++i) {
          if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(interval));
          auto dev = open(o, OpenMode::kReadOnly);
          print_counters(*dev, entries, o.json, true, out);
        }
      }
    } else if (*clear || *reset || *enable || *disable) {
      auto dev = open(o, OpenMode::kControl);
      if (*clear) dev->clear_counters();
      if (*reset) dev->reset();
      if (*enable || *disable) dev->set_enabled(enable->parsed());
      out << fmt::format("{}: {}\n", dev->spec(),
                         *clear    ? "counters cleared"
                         : *reset  ? "engine reset"
                         : *enable ? "enabled"
                                   : "disabled");
    } else if (*send) {
      auto dev = open(o, OpenMode::kControl);
      auto* sim = dynamic_cast<SimulationDevice*>(dev.get());
      if (!sim)
        throw DriverError(ErrorKind::kUnsupported, "send works on the simulation backend only (-d sim)");
      // The output keeps the input's timestamps: each frame the engine sends
      // is stamped with the time of the frame that caused it.
      pcapio::PcapReader in(pcap_in);
      std::optional<pcapio::PcapWriter> dump;
      if (!pcap_out.empty()) dump.emplace(pcap_out, in.nanosecond());
      pcapio::Record rec;
      uint64_t frames = 0, sent = 0, partial = 0;
      while (in.next(rec)) {
        ++frames;
        if (rec.caplen < rec.wire_len) ++partial;  // snapped frames go in as captured; the engine judges them
        for (const Frame& f : sim->send_frame(rec.data, rec.caplen)) {
          ++sent;
          if (dump) dump->write(rec.ts, f.data(), static_cast<uint32_t>(f.size()));
        }
        if (frames % 10000 == 0) err << "send: " << frames << " frames\n";
      }
      if (!in.error().empty()) throw DriverError(ErrorKind::kInvalidArgument, pcap_in + ": " + in.error());
      if (dump) dump->close();
      out << fmt::format("{}: {} frames in, {} frames out{}{}\n", dev->spec(), frames, sent,
                         partial ? fmt::format(" ({} captured shorter than on the wire)", partial) : "",
                         pcap_out.empty() ? "" : ", written to " + pcap_out);
    }
  } catch (const DriverError& e) {
    err << "panamactl: " << to_string(e.kind()) << ": " << e.what() << "\n";
    return 1;
  } catch (const config::ConfigError& e) {
    err << "panamactl: configuration: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "panamactl: " << e.what() << "\n";
    return 1;
  }
  return rc;
}

}  // namespace panama::driver
