// Payload copies of the worker's data path: into a frame (a chunk of the
// user's buffer) and out of a result (into the user's buffer).
//
// A large allreduce streams through memory once: the chunk the worker copies
// into a frame is read next by another agent (the NIC, or the PSwitch thread
// over net_ring), and the result it copies into the user's buffer is not read
// again before the whole buffer is done, by which time it has left the cache.
// Ordinary stores first read each destination line into the cache (a
// read-for-ownership) and then evict other data for it; streaming
// (non-temporal) stores write whole lines to memory without reading them.
// glibc's memcpy makes the same choice, but only for a single copy larger
// than the cache; a worker copies 1-8 KiB at a time, so the caller decides
// from the size of the whole allreduce (RuntimeOptions::streaming_copy_bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace panama::runtime {

// Copies `bytes` from `src` to `dst` (which must not overlap). With
// `streaming`, the part of `dst` from its first 16-byte boundary on is
// written with non-temporal 16-byte stores and fenced, so the bytes are
// visible to other threads once this returns, like a plain copy's; the head
// before the boundary and the tail of fewer than 64 bytes are copied plainly.
// Without SSE2 (or without `streaming`) this is memcpy.
inline void copy_payload(void* dst, const void* src, size_t bytes, bool streaming) {
#if defined(__SSE2__)
  if (streaming && bytes >= 128) {
    auto* d = static_cast<uint8_t*>(dst);
    auto* s = static_cast<const uint8_t*>(src);
    const size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    size_t i = 0;
    for (; i + 64 <= bytes; i += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
      const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
    }
    std::memcpy(d + i, s + i, bytes - i);
    // Non-temporal stores are weakly ordered: fence them before the frame is
    // handed on or the result reported done.
    _mm_sfence();
    return;
  }
#endif
  (void)streaming;
  std::memcpy(dst, src, bytes);
}

}  // namespace panama::runtime
