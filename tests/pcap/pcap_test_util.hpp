// Helpers for the pcap tool tests: run a program as a subprocess with its
// output captured, and read pcap files with a small parser of the test's
// own (not libpcap, not the tool's reader), so the files the tool writes
// are checked against the file format itself.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace panama::test {

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

inline std::string temp_path(const std::string& name) {
  return "/tmp/panama_test_pcap_" + std::to_string(::getpid()) + "_" + name;
}

// Runs `argv` (argv[0] is the program path) with stdout and stderr captured.
inline RunResult run_program(const std::vector<std::string>& args) {
  const std::string out_path = temp_path("stdout");
  const std::string err_path = temp_path("stderr");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

struct PcapRecord {
  uint32_t sec;
  uint32_t frac;
  uint32_t orig_len;
  std::vector<uint8_t> data;
};

struct PcapFile {
  uint32_t magic = 0;
  uint32_t linktype = 0;
  std::vector<PcapRecord> records;
};

inline uint32_t le32(const std::string& s, size_t pos) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[pos])) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[pos + 1])) << 8) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[pos + 2])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[pos + 3])) << 24);
}

// Little-endian classic pcap (what libpcap writes on x86).
inline PcapFile parse_pcap(const std::string& bytes) {
  if (bytes.size() < 24) throw std::runtime_error("pcap shorter than its header");
  PcapFile f;
  f.magic = le32(bytes, 0);
  if (f.magic != 0xA1B2C3D4u && f.magic != 0xA1B23C4Du) throw std::runtime_error("not a little-endian pcap");
  f.linktype = le32(bytes, 20);
  size_t pos = 24;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 16) throw std::runtime_error("truncated record header");
    PcapRecord r;
    r.sec = le32(bytes, pos);
    r.frac = le32(bytes, pos + 4);
    const uint32_t incl = le32(bytes, pos + 8);
    r.orig_len = le32(bytes, pos + 12);
    pos += 16;
    if (bytes.size() - pos < incl) throw std::runtime_error("truncated record data");
    r.data.assign(bytes.begin() + static_cast<long>(pos), bytes.begin() + static_cast<long>(pos + incl));
    pos += incl;
    f.records.push_back(std::move(r));
  }
  return f;
}

// A classic pcap file from records (for inputs the tests craft).
inline std::string make_pcap(const std::vector<PcapRecord>& records, uint32_t linktype = 1,
                             bool nano = false) {
  std::string s;
  const auto put32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  };
  put32(nano ? 0xA1B23C4Du : 0xA1B2C3D4u);
  s.push_back(2), s.push_back(0), s.push_back(4), s.push_back(0);  // version 2.4
  put32(0);
  put32(0);
  put32(65535);
  put32(linktype);
  for (const PcapRecord& r : records) {
    put32(r.sec);
    put32(r.frac);
    put32(static_cast<uint32_t>(r.data.size()));
    put32(r.orig_len);
    s.append(r.data.begin(), r.data.end());
  }
  return s;
}

}  // namespace panama::test
