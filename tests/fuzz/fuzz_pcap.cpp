// libFuzzer target: the pcap reader (sim/pcap, panama_pcap_io).
//
// Input: the bytes of a capture file, given to the reader through an
// in-memory file (memfd) by its /proc/self/fd path. Invariants:
//  - a file that is not an Ethernet capture, or a damaged record, is a
//    PcapError naming the file: no other exception escapes, nothing
//    crashes, no record reads outside its bytes;
//  - what PcapReader::next returns record by record is what read_frames
//    returns;
//  - frames read back from a file write_frames made of them are the same.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "panama/pcap/pcap_file.hpp"

using namespace panama::pcapio;

namespace {

// An in-memory file with a path every fopen can use.
struct MemFile {
  int fd = -1;
  std::string path;
  explicit MemFile(const char* name) {
    fd = memfd_create(name, 0);
    if (fd < 0) std::abort();
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  void set(const uint8_t* data, size_t size) {
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static MemFile input("panama-fuzz-pcap-in");
  static MemFile output("panama-fuzz-pcap-out");
  input.set(data, size);

  Frames frames;
  try {
    frames = read_frames(input.path);
  } catch (const PcapError& e) {
    PANAMA_FUZZ_CHECK(std::string(e.what()).rfind(input.path, 0) == 0);
    return 0;
  }

  // The record-by-record view agrees with read_frames.
  {
    PcapReader reader(input.path);
    Record rec;
    size_t i = 0;
    while (reader.next(rec)) {
      PANAMA_FUZZ_CHECK(i < frames.size());
      PANAMA_FUZZ_CHECK(rec.caplen == frames[i].size());
      PANAMA_FUZZ_CHECK(std::vector<uint8_t>(rec.data, rec.data + rec.caplen) == frames[i]);
      ++i;
    }
    PANAMA_FUZZ_CHECK(i == frames.size() && reader.error().empty());
  }

  // Frames longer than the writer's snapshot length are not round-tripped.
  for (const auto& f : frames) {
    if (f.size() > 65535) return 0;
  }
  if (ftruncate(output.fd, 0) != 0) std::abort();
  write_frames(output.path, frames);
  PANAMA_FUZZ_CHECK(read_frames(output.path) == frames);
  return 0;
}
