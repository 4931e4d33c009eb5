// Compatibility layer between Vitis HLS and a plain C++ compiler.
//
// Under Vitis HLS (__SYNTHESIS__ or PANAMA_VITIS_HLS defined) this pulls in
// the vendor's ap_axi_sdata.h / hls_stream.h; otherwise it supplies small
// equivalents with the same shape, so the engine compiles with g++ here and
// with Vitis HLS where it is installed. Only what the engine uses is defined.
#pragma once

#include <stdint.h>

#define PANAMA_HLS_STR_(x) #x
#define PANAMA_HLS_STR(x) PANAMA_HLS_STR_(x)

#if defined(__SYNTHESIS__) || defined(PANAMA_VITIS_HLS)
#include <ap_axi_sdata.h>
#include <ap_int.h>
#include <hls_stream.h>
#define PANAMA_HLS(x) _Pragma(PANAMA_HLS_STR(HLS x))

namespace panama {
namespace hlsc {
template <class T>
using stream = ::hls::stream<T>;
using AxisWord = ::ap_axiu<512, 0, 0, 0>;
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

// One 512-bit AXI4-Stream beat: byte i of the beat is tdata[8i+7:8i].
struct AxisWord {
  uint8_t data[64];
  uint64_t keep;
  bool last;
};
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

}  // namespace hlsc
}  // namespace panama
#endif
