// Reading and writing Ethernet pcap files with libpcap, with errors that
// name the file: the project's one pcap reader/writer (panama-pcap, the
// sample generator, the co-simulation and panamactl use it). Timestamps
// keep the input's resolution (micro- or nanoseconds) so tools can copy
// them to their output unchanged.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

struct pcap;
struct pcap_dumper;

namespace panama::pcapio {

class PcapError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Timestamp {
  int64_t sec = 0;
  uint32_t frac = 0;  // microseconds or nanoseconds, as the file says
};

// One record; `data` is valid until the next call to PcapReader::next.
struct Record {
  Timestamp ts;
  const uint8_t* data = nullptr;
  uint32_t caplen = 0;    // bytes captured (and in `data`)
  uint32_t wire_len = 0;  // bytes the frame had on the wire
};

class PcapReader {
 public:
  // Opens a pcap or pcapng file of Ethernet frames (DLT_EN10MB); anything
  // else is a PcapError naming the file and the link type found.
  explicit PcapReader(const std::string& path);
  ~PcapReader();
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;

  // The next record, or false at the end of the file. A damaged record
  // (typically a capture cut off mid-write) also ends the file and is
  // reported by error().
  bool next(Record& rec);
  const std::string& error() const { return error_; }
  bool nanosecond() const { return nanosecond_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  pcap* handle_ = nullptr;
  bool nanosecond_ = false;
  std::string error_;
};

class PcapWriter {
 public:
  // Creates (truncates) an Ethernet pcap file with micro- or nanosecond timestamps.
  PcapWriter(const std::string& path, bool nanosecond);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  void write(const Timestamp& ts, const uint8_t* data, uint32_t len);
  // Flushes and closes; throws PcapError when anything failed to reach the file.
  void close();

 private:
  std::string path_;
  pcap* dead_ = nullptr;
  pcap_dumper* dumper_ = nullptr;
};

using Frames = std::vector<std::vector<uint8_t>>;

// Every frame of an Ethernet capture, as captured; a damaged record is a
// PcapError naming the file.
Frames read_frames(const std::string& path);

// Writes `frames` as an Ethernet capture with timestamps 0, 1, 2... us.
void write_frames(const std::string& path, const Frames& frames);

}  // namespace panama::pcapio
