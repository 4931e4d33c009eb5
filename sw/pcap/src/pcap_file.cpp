// libpcap wrappers: the project's pcap reader and writer (pcap_file.hpp).
#include "panama/pcap/pcap_file.hpp"

#include <pcap/pcap.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace panama::pcapio {

namespace {

// Nanosecond pcap files have their own magic number; libpcap reports every
// file in the precision it was opened with, so look before opening.
bool file_has_nanosecond_magic(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  uint8_t m[4] = {};
  const size_t n = std::fread(m, 1, 4, f);
  std::fclose(f);
  return n == 4 && ((m[0] == 0xA1 && m[1] == 0xB2 && m[2] == 0x3C && m[3] == 0x4D) ||
                    (m[0] == 0x4D && m[1] == 0x3C && m[2] == 0xB2 && m[3] == 0xA1));
}

// The link type as the file records it (the LINKTYPE_ number of the pcap
// header), which can differ from libpcap's DLT_ number for the same type
// (raw IP is LINKTYPE_RAW 101 in files, DLT_RAW 12 or 14 in libpcap).
// -1 when it cannot be read (pcapng keeps it per interface).
int file_link_type(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return -1;
  uint8_t h[24] = {};
  const size_t n = std::fread(h, 1, sizeof(h), f);
  std::fclose(f);
  if (n != sizeof(h)) return -1;
  const bool le = (h[0] == 0xD4 && h[1] == 0xC3 && h[2] == 0xB2 && h[3] == 0xA1) ||
                  (h[0] == 0x4D && h[1] == 0x3C && h[2] == 0xB2 && h[3] == 0xA1);
  const bool be = (h[0] == 0xA1 && h[1] == 0xB2 && h[2] == 0xC3 && h[3] == 0xD4) ||
                  (h[0] == 0xA1 && h[1] == 0xB2 && h[2] == 0x3C && h[3] == 0x4D);
  if (!le && !be) return -1;
  const uint32_t v =
      le ? (uint32_t{h[20]} | uint32_t{h[21]} << 8 | uint32_t{h[22]} << 16 | uint32_t{h[23]} << 24)
         : (uint32_t{h[23]} | uint32_t{h[22]} << 8 | uint32_t{h[21]} << 16 | uint32_t{h[20]} << 24);
  return static_cast<int>(v & 0x0FFFFFFF);  // the upper bits carry FCS flags
}

std::string link_type_name(int dlt, int file_type) {
  const char* name = pcap_datalink_val_to_name(dlt);
  const char* desc = pcap_datalink_val_to_description(dlt);
  std::string s = std::string(name ? name : "unknown") + " (";
  if (desc) s += std::string(desc) + ", ";
  return s + "link type " + std::to_string(file_type >= 0 ? file_type : dlt) + ")";
}

}  // namespace

PcapReader::PcapReader(const std::string& path) : path_(path) {
  nanosecond_ = file_has_nanosecond_magic(path);
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  handle_ = pcap_open_offline_with_tstamp_precision(
      path.c_str(), nanosecond_ ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO, errbuf);
  if (handle_ == nullptr) throw PcapError(path + ": cannot read as pcap: " + errbuf);
  const int dlt = pcap_datalink(handle_);
  if (dlt != DLT_EN10MB) {
    pcap_close(handle_);
    handle_ = nullptr;
    throw PcapError(path + ": frames are " + link_type_name(dlt, file_link_type(path)) +
                    "; Ethernet (link type 1) is needed");
  }
}

PcapReader::~PcapReader() {
  if (handle_ != nullptr) pcap_close(handle_);
}

bool PcapReader::next(Record& rec) {
  if (handle_ == nullptr) return false;
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  const int rc = pcap_next_ex(handle_, &hdr, &data);
  if (rc == 1) {
    rec.ts.sec = hdr->ts.tv_sec;
    rec.ts.frac = static_cast<uint32_t>(hdr->ts.tv_usec);  // ns when opened with nanosecond precision
    rec.data = data;
    rec.caplen = hdr->caplen;
    rec.wire_len = hdr->len;
    return true;
  }
  if (rc == PCAP_ERROR) error_ = pcap_geterr(handle_);
  return false;
}

PcapWriter::PcapWriter(const std::string& path, bool nanosecond) : path_(path) {
  dead_ = pcap_open_dead_with_tstamp_precision(
      DLT_EN10MB, 65535, nanosecond ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO);
  if (dead_ == nullptr) throw PcapError(path + ": cannot create a pcap writer");
  dumper_ = pcap_dump_open(dead_, path.c_str());
  if (dumper_ == nullptr) {
    const std::string err = pcap_geterr(dead_);
    pcap_close(dead_);
    dead_ = nullptr;
    throw PcapError(path + ": cannot write: " + err);
  }
}

PcapWriter::~PcapWriter() {
  if (dumper_ != nullptr) pcap_dump_close(dumper_);
  if (dead_ != nullptr) pcap_close(dead_);
}

void PcapWriter::write(const Timestamp& ts, const uint8_t* data, uint32_t len) {
  if (dumper_ == nullptr) throw PcapError(path_ + ": write after close");
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = static_cast<time_t>(ts.sec);
  hdr.ts.tv_usec = static_cast<suseconds_t>(ts.frac);
  hdr.caplen = len;
  hdr.len = len;
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, data);
}

void PcapWriter::close() {
  if (dumper_ == nullptr) return;
  FILE* f = pcap_dump_file(dumper_);
  const bool failed = pcap_dump_flush(dumper_) != 0 || std::ferror(f) != 0;
  const int saved = errno;
  pcap_dump_close(dumper_);
  dumper_ = nullptr;
  pcap_close(dead_);
  dead_ = nullptr;
  if (failed) throw PcapError(path_ + ": write failed: " + std::strerror(saved));
}

Frames read_frames(const std::string& path) {
  PcapReader reader(path);
  Frames frames;
  Record rec;
  while (reader.next(rec)) frames.emplace_back(rec.data, rec.data + rec.caplen);
  if (!reader.error().empty()) throw PcapError(path + ": " + reader.error());
  return frames;
}

void write_frames(const std::string& path, const Frames& frames) {
  PcapWriter writer(path, false);
  Timestamp ts;
  for (const auto& f : frames) {
    writer.write(ts, f.data(), static_cast<uint32_t>(f.size()));
    ++ts.frac;
  }
  writer.close();
}

}  // namespace panama::pcapio
