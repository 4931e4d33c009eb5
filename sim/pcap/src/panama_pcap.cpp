// panama-pcap: runs an engine over a pcap of input frames and writes every
// frame the engine sends, in order, to an output pcap; the engine's table
// comes from a node configuration file. Prints the engine's counters at the
// end (table, or JSON with --json). docs/pcap-tool.md is the user guide.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "panama/config/node_config.hpp"
#include "panama/engine/apply_config.hpp"
#include "panama/engine/backend.hpp"
#include "panama/engine/counters.hpp"
#include "panama/pcap/pcap_file.hpp"

namespace {

constexpr int kExitRuntimeError = 1;
constexpr int kExitUsage = 2;

struct Options {
  std::string config;
  std::string in;
  std::string out;
  std::string engine = "model";
  bool json = false;
  bool quiet = false;
};

struct RunStats {
  uint64_t frames_in = 0;
  uint64_t bytes_in = 0;
  uint64_t snap_truncated = 0;  // captured with fewer bytes than on the wire
  uint64_t frames_out = 0;
  uint64_t bytes_out = 0;
  std::string input_warning;
};

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Reports progress about once a second on a terminal; silent otherwise.
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled), start_(Clock::now()), last_(start_) {}
  void tick(uint64_t frames) {
    if (!enabled_ || (frames & 1023) != 0) return;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\rpanama-pcap: %llu frames (%.0f frames/s)",
                 static_cast<unsigned long long>(frames), frames / secs);
    std::fflush(stderr);
    shown_ = true;
  }
  void done() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  bool shown_ = false;
  Clock::time_point start_;
  Clock::time_point last_;
};

RunStats run(const Options& opt, panama::config::NodeConfig& cfg, panama::EngineBackend& engine) {
  using namespace panama;
  pcapio::PcapReader reader(opt.in);
  if (same_file(opt.in, opt.out))
    throw pcapio::PcapError(opt.out + ": is the input file; choose another output");

  EngineRegisters<EngineBackend> regs(engine);
  config::apply_node_config(regs, cfg);

  pcapio::PcapWriter writer(opt.out, reader.nanosecond());
  RunStats st;
  Progress progress(!opt.quiet && ::isatty(STDERR_FILENO));
  pcapio::Record rec;
  try {
    while (reader.next(rec)) {
      ++st.frames_in;
      st.bytes_in += rec.caplen;
      if (rec.caplen < rec.wire_len) ++st.snap_truncated;
      // Outputs carry the timestamp of the input frame that caused them.
      EmitFn write([&](const uint8_t* data, uint32_t len) {
        writer.write(rec.ts, data, len);
        ++st.frames_out;
        st.bytes_out += len;
      });
      engine.process_frame(rec.data, rec.caplen, write);
      progress.tick(st.frames_in);
    }
    writer.close();
  } catch (...) {
    // A partial output would look like a complete run: remove it.
    progress.done();
    std::remove(opt.out.c_str());
    throw;
  }
  progress.done();
  st.input_warning = reader.error();
  return st;
}

void report(const Options& opt, const panama::config::NodeConfig& cfg, panama::EngineBackend& engine,
            const RunStats& st, double seconds) {
  using namespace panama;
  EngineRegisters<EngineBackend> regs(engine);
  const config::CounterSnapshot snap = config::read_counters(regs, cfg.entries);
  if (opt.json) {
    // Top-level keys in reading order; the counters keep their own layout.
    nlohmann::ordered_json doc;
    doc["node"] = cfg.node;
    doc["engine"] = engine.name();
    doc["input"] = {{"path", opt.in},
                    {"frames", st.frames_in},
                    {"bytes", st.bytes_in},
                    {"snap_truncated", st.snap_truncated}};
    doc["output"] = {{"path", opt.out}, {"frames", st.frames_out}, {"bytes", st.bytes_out}};
    doc["counters"] = nlohmann::ordered_json::parse(config::counters_to_json(snap).dump());
    if (!st.input_warning.empty()) doc["input"]["error"] = st.input_warning;
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << fmt::format("node {} (engine {}): {} frames in, {} frames out\n\n", cfg.node, engine.name(),
                             st.frames_in, st.frames_out)
              << config::format_counters_table(snap);
  }
  std::cout.flush();

  if (!st.input_warning.empty()) {
    std::fprintf(stderr, "panama-pcap: warning: %s: %s; stopped after %llu frames\n", opt.in.c_str(),
                 st.input_warning.c_str(), static_cast<unsigned long long>(st.frames_in));
  }
  if (st.snap_truncated != 0) {
    std::fprintf(stderr,
                 "panama-pcap: warning: %llu input frames were cut short by the capture's snap length; "
                 "the engine saw only the captured bytes\n",
                 static_cast<unsigned long long>(st.snap_truncated));
  }
  if (!opt.quiet) {
    std::fprintf(stderr,
                 "panama-pcap: processed %llu frames (%llu bytes) in %.3f s; wrote %llu frames to %s\n",
                 static_cast<unsigned long long>(st.frames_in), static_cast<unsigned long long>(st.bytes_in),
                 seconds, static_cast<unsigned long long>(st.frames_out), opt.out.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{
      "Runs a PANAMA engine over a pcap of Ethernet frames and writes the frames it sends to another pcap.",
      "panama-pcap"};
  std::string engines_help = "engine backend (";
  for (const auto& b : panama::engine_backends()) {
    engines_help +=
        (b.name == panama::engine_backends().front().name ? "" : "; ") + b.name + ": " + b.description;
  }
  engines_help += ")";
  app.add_option("--config", opt.config, "node configuration file (JSON, docs/configuration.md)")->required();
  app.add_option("--in", opt.in, "input pcap of Ethernet frames")->required();
  app.add_option("--out", opt.out, "output pcap (created or overwritten)")->required();
  app.add_option("--engine", opt.engine, engines_help)->capture_default_str();
  app.add_flag("--json", opt.json, "print the counters as JSON instead of a table");
  app.add_flag("-q,--quiet", opt.quiet, "no progress or summary on stderr (warnings and errors still)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "panama-pcap: error: %s\nRun 'panama-pcap --help' for usage.\n", e.what());
    return kExitUsage;
  }

  std::unique_ptr<panama::EngineBackend> engine;
  try {
    engine = panama::make_engine_backend(opt.engine);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "panama-pcap: error: --engine: %s\n", e.what());
    return kExitUsage;
  }

  try {
    panama::config::NodeConfig cfg = panama::config::load_node_config(opt.config);
    const auto start = std::chrono::steady_clock::now();
    const RunStats st = run(opt, cfg, *engine);
    report(opt, cfg, *engine, st,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-pcap: error: %s\n", e.what());
  }
  return kExitRuntimeError;
}
