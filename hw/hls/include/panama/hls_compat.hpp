// Compatibility layer between Vitis HLS and a plain C++ compiler.
//
// Under Vitis HLS (__SYNTHESIS__ or PANAMA_VITIS_HLS defined) this pulls in
// the vendor's ap_int.h / ap_axi_sdata.h / hls_stream.h; otherwise it supplies
// small equivalents with the same shape, so the engine compiles with g++ here
// and with Vitis HLS where it is installed. Only what the engine uses is
// defined. The Vitis branch is written to the documented ap_uint / ap_axiu /
// hls::stream API (UG1399) and has not been compiled here: no Vitis
// installation is available (docs/hls.md).
//
// Types:
//   Word512   one 512-bit datapath word: 64 bytes, byte i = bits [8i+7:8i],
//             fp32 lane l = bits [32l+31:32l], 16-bit lane l = bits
//             [16l+15:16l] (little-endian, as on the wire).
//   AxisWord  one AXI4-Stream beat: tdata (Word512), tkeep (64 bits), tlast,
//             tuser (1 bit: the MAC's error flag for the frame).
#pragma once

#include <stdint.h>

#define PANAMA_HLS_STR_(x) #x
#define PANAMA_HLS_STR(x) PANAMA_HLS_STR_(x)

// The return type of a DATAFLOW process of the Vitis top: nothing under
// synthesis (a process returns void), whether it did anything in C
// simulation, where the top runs its free-running processes until none
// does (src/engine_top.cpp, docs/hls.md).
#if defined(__SYNTHESIS__)
#define PANAMA_PROCESS_RESULT void
#define PANAMA_PROCESS_RETURN(x) (void)(x)
#else
#define PANAMA_PROCESS_RESULT bool
#define PANAMA_PROCESS_RETURN(x) return (x)
#endif

#if defined(__SYNTHESIS__) || defined(PANAMA_VITIS_HLS)
#include <ap_axi_sdata.h>
#include <ap_int.h>
#include <hls_stream.h>
#define PANAMA_HLS(x) _Pragma(PANAMA_HLS_STR(HLS x))

namespace panama {
namespace hlsc {
template <class T>
using stream = ::hls::stream<T>;
using Word512 = ::ap_uint<512>;
using AxisWord = ::ap_axiu<512, 1, 0, 0>;  // TUSER width 1

inline uint8_t word_byte(const Word512& w, unsigned i) {
  return w.range(8 * i + 7, 8 * i);
}
inline void word_set_byte(Word512& w, unsigned i, uint8_t v) {
  w.range(8 * i + 7, 8 * i) = v;
}
inline uint32_t word_lane(const Word512& w, unsigned l) {
  return w.range(32 * l + 31, 32 * l);
}
inline void word_set_lane(Word512& w, unsigned l, uint32_t v) {
  w.range(32 * l + 31, 32 * l) = v;
}
inline uint16_t word_half(const Word512& w, unsigned l) {
  return w.range(16 * l + 15, 16 * l);
}
inline void word_set_half(Word512& w, unsigned l, uint16_t v) {
  w.range(16 * l + 15, 16 * l) = v;
}
inline Word512 axis_data(const AxisWord& w) {
  return w.data;
}
inline void axis_set_data(AxisWord& w, const Word512& d) {
  w.data = d;
}
inline uint64_t axis_keep_bits(const AxisWord& w) {
  return w.keep.to_uint64();
}
inline void axis_set_keep_bits(AxisWord& w, uint64_t keep) {
  w.keep = keep;
  w.strb = keep;
}
inline uint8_t axis_byte(const AxisWord& w, unsigned i) {
  return w.data.range(8 * i + 7, 8 * i);
}
inline void axis_set_byte(AxisWord& w, unsigned i, uint8_t v) {
  w.data.range(8 * i + 7, 8 * i) = v;
}
inline bool axis_keep(const AxisWord& w, unsigned i) {
  return w.keep[i];
}
inline void axis_set_keep(AxisWord& w, unsigned i, bool v) {
  w.keep[i] = v;
}
inline bool axis_last(const AxisWord& w) {
  return w.last;
}
inline void axis_set_last(AxisWord& w, bool v) {
  w.last = v;
}
inline bool axis_user(const AxisWord& w) {
  return w.user[0];
}
inline void axis_set_user(AxisWord& w, bool v) {
  w.user = v ? 1 : 0;
}
}  // namespace hlsc
}  // namespace panama

#else
#include <deque>
#include <stdexcept>

#define PANAMA_HLS(x)

namespace panama {
namespace hlsc {

// FIFO with the interface of hls::stream (C simulation only).
template <class T>
class stream {
 public:
  bool empty() const { return q_.empty(); }
  bool full() const { return false; }
  size_t size() const { return q_.size(); }
  void write(const T& v) { q_.push_back(v); }
  T read() {
    if (q_.empty()) throw std::runtime_error("hls stream: read from an empty stream");
    T v = q_.front();
    q_.pop_front();
    return v;
  }
  bool read_nb(T& v) {
    if (q_.empty()) return false;
    v = read();
    return true;
  }

 private:
  std::deque<T> q_;
};

// One 512-bit word, as bytes: byte i is bits [8i+7:8i].
struct Word512 {
  uint8_t bytes[64];
};
inline uint8_t word_byte(const Word512& w, unsigned i) {
  return w.bytes[i];
}
inline void word_set_byte(Word512& w, unsigned i, uint8_t v) {
  w.bytes[i] = v;
}
inline uint32_t word_lane(const Word512& w, unsigned l) {
  const uint8_t* p = w.bytes + 4 * l;
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline void word_set_lane(Word512& w, unsigned l, uint32_t v) {
  uint8_t* p = w.bytes + 4 * l;
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}
inline uint16_t word_half(const Word512& w, unsigned l) {
  return static_cast<uint16_t>(w.bytes[2 * l] | (w.bytes[2 * l + 1] << 8));
}
inline void word_set_half(Word512& w, unsigned l, uint16_t v) {
  w.bytes[2 * l] = static_cast<uint8_t>(v);
  w.bytes[2 * l + 1] = static_cast<uint8_t>(v >> 8);
}

// One 512-bit AXI4-Stream beat: byte i of the beat is tdata[8i+7:8i]; user
// is TUSER (bit 0: the MAC marked the frame bad).
struct AxisWord {
  uint8_t data[64];
  uint64_t keep;
  bool last;
  uint8_t user;
};
inline Word512 axis_data(const AxisWord& w) {
  Word512 d;
  for (unsigned i = 0; i < 64; ++i) d.bytes[i] = w.data[i];
  return d;
}
inline void axis_set_data(AxisWord& w, const Word512& d) {
  for (unsigned i = 0; i < 64; ++i) w.data[i] = d.bytes[i];
}
inline uint64_t axis_keep_bits(const AxisWord& w) {
  return w.keep;
}
inline void axis_set_keep_bits(AxisWord& w, uint64_t keep) {
  w.keep = keep;
}
inline uint8_t axis_byte(const AxisWord& w, unsigned i) {
  return w.data[i];
}
inline void axis_set_byte(AxisWord& w, unsigned i, uint8_t v) {
  w.data[i] = v;
}
inline bool axis_keep(const AxisWord& w, unsigned i) {
  return (w.keep >> i) & 1;
}
inline void axis_set_keep(AxisWord& w, unsigned i, bool v) {
  w.keep = v ? (w.keep | (uint64_t{1} << i)) : (w.keep & ~(uint64_t{1} << i));
}
inline bool axis_last(const AxisWord& w) {
  return w.last;
}
inline void axis_set_last(AxisWord& w, bool v) {
  w.last = v;
}
inline bool axis_user(const AxisWord& w) {
  return (w.user & 1u) != 0;
}
inline void axis_set_user(AxisWord& w, bool v) {
  w.user = v ? 1 : 0;
}

}  // namespace hlsc
}  // namespace panama
#endif
