// SystemC testbench: the engine Verilated as a SystemC module (--sc), driven
// by clocked SystemC processes with the same seeded scenarios as the C++
// co-simulation, and compared with the HLS model frame by frame, bit for bit,
// then register by register and counter by counter.
//
// Usage: panama_cosim_sc [first_seed] [seeds] [frames per seed]
// Prints one line per seed; a failure prints the seed, writes the traffic as
// cosim-sc-fail-seed-N.pcap and exits 1.
#include <systemc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Vpanama_engine_sc.h"
#include "panama/cosim/cosim.hpp"
#include "panama/pcap/pcap_file.hpp"
#include "panama/regmap.hpp"

using namespace panama;
using namespace panama::cosim;

SC_MODULE(EngineTestbench) {
  sc_in<bool> clk;

  sc_signal<bool> rst;
  sc_signal<sc_bv<512>> s_tdata, m_tdata;
  sc_signal<uint64_t> s_tkeep, m_tkeep;
  sc_signal<bool> s_tvalid, s_tready, s_tlast, m_tvalid, m_tready, m_tlast;
  sc_signal<bool> s_tuser;  // MAC error flag, held low: this bench sends good frames
  sc_signal<uint32_t> awaddr, wdata, wstrb, bresp, araddr, rdata, rresp;
  sc_signal<bool> awvalid, awready, wvalid, wready, bvalid, bready, arvalid, arready, rvalid, rready;
  sc_signal<bool> idle, stall_in, stall_desc, stall_reg, dec_valid;
  sc_signal<uint32_t> dec_action, dec_counter, dec_entry;
  sc_signal<uint32_t> fwd_drop;  // held low: no cage-to-cage FIFOs here
  sc_signal<bool> rx_frame, rx_drop_overflow, rx_drop_bad, in_stall;
  sc_signal<uint32_t> rx_free;
  uint32_t rx_capacity = 0;  // receive FIFO beats (rx_free after reset)

  std::unique_ptr<Vpanama_engine_sc> dut;
  std::vector<uint64_t> seeds;
  uint32_t frames_per_seed = 1000;
  int exit_code = 0;

  // Outputs collected by the monitor process.
  std::vector<Frame> out_frames;
  std::vector<EngineOutcome> outcomes;
  std::vector<uint8_t> cur;
  double out_stall = 0.0;
  std::mt19937_64 out_rng{1};

  SC_CTOR(EngineTestbench) : dut(new Vpanama_engine_sc("dut")) {
    dut->clk(clk);
    dut->rst(rst);
    dut->s_axis_tdata(s_tdata);
    dut->s_axis_tkeep(s_tkeep);
    dut->s_axis_tvalid(s_tvalid);
    dut->s_axis_tready(s_tready);
    dut->s_axis_tlast(s_tlast);
    dut->s_axis_tuser(s_tuser);
    dut->m_axis_tdata(m_tdata);
    dut->m_axis_tkeep(m_tkeep);
    dut->m_axis_tvalid(m_tvalid);
    dut->m_axis_tready(m_tready);
    dut->m_axis_tlast(m_tlast);
    dut->s_axil_awaddr(awaddr);
    dut->s_axil_awvalid(awvalid);
    dut->s_axil_awready(awready);
    dut->s_axil_wdata(wdata);
    dut->s_axil_wstrb(wstrb);
    dut->s_axil_wvalid(wvalid);
    dut->s_axil_wready(wready);
    dut->s_axil_bresp(bresp);
    dut->s_axil_bvalid(bvalid);
    dut->s_axil_bready(bready);
    dut->s_axil_araddr(araddr);
    dut->s_axil_arvalid(arvalid);
    dut->s_axil_arready(arready);
    dut->s_axil_rdata(rdata);
    dut->s_axil_rresp(rresp);
    dut->s_axil_rvalid(rvalid);
    dut->s_axil_rready(rready);
    dut->status_idle(idle);
    dut->status_stall_in_fifo(stall_in);
    dut->status_stall_desc_fifo(stall_desc);
    dut->status_stall_reg_write(stall_reg);
    dut->status_decision_valid(dec_valid);
    dut->status_decision_action(dec_action);
    dut->status_decision_counter(dec_counter);
    dut->status_decision_entry(dec_entry);
    dut->fwd_drop(fwd_drop);
    dut->status_rx_frame(rx_frame);
    dut->status_rx_drop_overflow(rx_drop_overflow);
    dut->status_rx_drop_bad(rx_drop_bad);
    dut->status_rx_free(rx_free);
    dut->status_in_stall(in_stall);
    SC_THREAD(driver);
    sensitive << clk.pos();
    SC_THREAD(monitor);
    sensitive << clk.pos();
  }

  // Output side: random tready, frame reassembly, decision capture.
  void monitor() {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    m_tready.write(true);
    for (;;) {
      wait();
      if (m_tvalid.read() && m_tready.read()) {
        const sc_bv<512> d = m_tdata.read();
        const uint64_t keep = m_tkeep.read();
        for (int k = 0; k < 64; ++k) {
          if ((keep >> k) & 1u) cur.push_back(static_cast<uint8_t>(d.range(8 * k + 7, 8 * k).to_uint()));
        }
        if (m_tlast.read()) {
          out_frames.push_back(cur);
          cur.clear();
        }
      }
      if (dec_valid.read()) {
        EngineOutcome o{};
        o.action = static_cast<EngineAction>(dec_action.read());
        o.drop_counter = dec_counter.read();
        o.entry = dec_entry.read() == 0xFF ? -1 : static_cast<int32_t>(dec_entry.read());
        outcomes.push_back(o);
      }
      m_tready.write(!(out_stall > 0.0 && unit(out_rng) < out_stall));
    }
  }

  void reg_write(uint32_t addr, uint32_t value) {
    awaddr.write(addr & 0x3FFF);
    wdata.write(value);
    awvalid.write(true);
    wvalid.write(true);
    do wait();
    while (!(awready.read() && wready.read()));
    awvalid.write(false);
    wvalid.write(false);
    do wait();
    while (!bvalid.read());
  }

  uint32_t reg_read(uint32_t addr) {
    araddr.write(addr & 0x3FFF);
    arvalid.write(true);
    do wait();
    while (!arready.read());
    arvalid.write(false);
    do wait();
    while (!rvalid.read());
    return rdata.read();
  }

  // The engine takes every beat; before a frame the bench waits until its
  // receive FIFO has room for it (with a margin for the beats of the frame
  // before, still on their way in), so no frame is dropped for room.
  void send(const std::vector<Frame>& frames, double gap, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (const auto& f : frames) {
      const uint32_t need = std::min<uint32_t>(static_cast<uint32_t>((f.size() + 63) / 64) + 4, rx_capacity);
      while (rx_free.read() < need) {
        s_tvalid.write(false);
        wait();
      }
      for (size_t off = 0; off < f.size(); off += 64) {
        while (gap > 0.0 && unit(rng) < gap) {
          s_tvalid.write(false);
          wait();
        }
        sc_bv<512> d;
        uint64_t keep = 0;
        for (size_t k = 0; k < 64; ++k) {
          const uint8_t b = off + k < f.size() ? f[off + k] : 0;
          d.range(8 * k + 7, 8 * k) = b;
          if (off + k < f.size()) keep |= uint64_t{1} << k;
        }
        s_tdata.write(d);
        s_tkeep.write(keep);
        s_tlast.write(off + 64 >= f.size());
        s_tvalid.write(true);
        do wait();
        while (!s_tready.read());
      }
    }
    s_tvalid.write(false);
    s_tlast.write(false);
  }

  void wait_idle() {
    int quiet = 0;
    while (quiet < 4) {  // idle must hold while the last outputs are taken
      wait();
      quiet = idle.read() ? quiet + 1 : 0;
    }
  }

  std::string run_seed(uint64_t seed) {
    TrafficOptions opt;
    opt.frames = frames_per_seed;
    const Scenario sc = random_scenario(seed, opt);
    std::mt19937_64 rng(seed);
    out_stall = 0.2;
    out_rng.seed(seed ^ 0x5555);
    auto model = std::make_unique<RtlEngine::ModelEngine>();
    std::vector<Frame> mout;
    std::vector<EngineOutcome> moc;
    EmitFn sink([&](const uint8_t* d, uint32_t n) { mout.emplace_back(d, d + n); });
    auto both_write = [&](const std::vector<RegWrite>& w) -> std::string {
      for (const auto& r : w) {
        model->reg_write(r.addr, r.value);
        reg_write(r.addr, r.value);
        if (r.addr == regmap::kEntryCmd &&
            model->reg_read(regmap::kEntryStatus) != reg_read(regmap::kEntryStatus)) {
          return "entry command status differs";
        }
      }
      return "";
    };
    out_frames.clear();
    outcomes.clear();
    std::string err = both_write(sc.setup);
    for (size_t s = 0; err.empty() && s < sc.segments.size(); ++s) {
      for (const auto& f : sc.segments[s])
        moc.push_back(model->process_frame(f.data(), uint32_t(f.size()), sink));
      send(sc.segments[s], 0.2, rng);
      wait_idle();
      err = both_write(sc.between[s]);
    }
    if (err.empty() && outcomes.size() != moc.size()) err = "number of decisions differs";
    for (size_t i = 0; err.empty() && i < moc.size(); ++i) {
      if (moc[i].action != outcomes[i].action || moc[i].entry != outcomes[i].entry ||
          (moc[i].action == EngineAction::kDropped && moc[i].drop_counter != outcomes[i].drop_counter)) {
        err = "outcome of frame " + std::to_string(i) + " differs";
      }
    }
    if (err.empty() && mout != out_frames) err = "emitted frames differ";
    for (uint32_t c = 0; err.empty() && c < regmap::kNumGlobalCounters; ++c) {
      const uint32_t a = regmap::global_counter_addr(c);
      if (model->reg_read(a) != reg_read(a) || model->reg_read(a + 4) != reg_read(a + 4)) {
        err = std::string("counter ") + regmap::kGlobalCounterNames[c] + " differs";
      }
    }
    for (uint32_t e = 0; err.empty() && e < RtlEngine::kTableEntries; ++e) {
      for (uint32_t c = 0; err.empty() && c < regmap::kNumEntryCounters; ++c) {
        const uint32_t a = regmap::entry_counter_addr(e, c);
        if (model->reg_read(a) != reg_read(a)) err = "entry counter differs";
      }
    }
    if (!err.empty()) {
      try {
        panama::pcapio::write_frames("cosim-sc-fail-seed-" + std::to_string(seed) + ".pcap", all_frames(sc));
      } catch (const panama::pcapio::PcapError& e) {
        std::printf("could not write the failing traffic: %s\n", e.what());
      }
    }
    std::printf("systemc seed %llu: %zu frames, %zu emitted, %s\n", static_cast<unsigned long long>(seed),
                sc.frame_count(), mout.size(), err.empty() ? "match" : ("FAIL: " + err).c_str());
    return err;
  }

  void driver() {
    wstrb.write(0xF);
    bready.write(true);
    rready.write(true);
    rst.write(true);
    for (int i = 0; i < 4; ++i) wait();
    rst.write(false);
    wait();
    wait();
    rx_capacity = rx_free.read();
    for (uint64_t seed : seeds) {
      if (!run_seed(seed).empty()) {
        exit_code = 1;
        break;
      }
    }
    sc_stop();
  }
};

int sc_main(int argc, char** argv) {
  const uint64_t first = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : 1;
  const uint64_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : 3;
  const uint32_t frames = argc > 3 ? static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 0)) : 1000;
  if (n == 0 || frames == 0) {
    std::fprintf(stderr, "usage: panama_cosim_sc [first_seed] [seeds >= 1] [frames per seed >= 1]\n");
    return 2;
  }
  sc_clock clk("clk", 4, SC_NS);  // 250 MHz
  EngineTestbench tb("tb");
  tb.clk(clk);
  for (uint64_t s = first; s < first + n; ++s) tb.seeds.push_back(s);
  tb.frames_per_seed = frames;
  sc_start();
  return tb.exit_code;
}
