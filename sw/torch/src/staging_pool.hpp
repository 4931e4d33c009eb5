// The staging buffers of the `panama` backend's chunked pipeline
// (docs/pytorch.md, "CUDA tensors: the staged pipeline"): a tensor that the
// runtime cannot reduce in place (a CUDA tensor; a CPU tensor when staging is
// forced for tests) is cut into chunks; each chunk is copied into a host
// buffer of this pool (device to host), reduced there by the runtime, and
// copied back (host to device) while the next chunks are on the network.
// The pool allocates at most `max_buffers` buffers of `chunk_bytes` bytes,
// once, and hands them out again: no allocation per call.
//
// A released buffer may still be read by an asynchronous copy (its host to
// device copy was only enqueued); `wait_reusable` blocks until it is not,
// and runs when the buffer is handed out again, not when it is released.
//
// Torch-free: the buffer type and its allocation are the caller's.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace panama::torch_backend {

struct StagingPoolStats {
  size_t chunk_bytes = 0;
  size_t max_buffers = 0;
  size_t allocated = 0;   // buffers allocated so far (never more than max_buffers)
  size_t in_use = 0;      // handed out now
  size_t max_in_use = 0;  // most handed out at once
  uint64_t acquired = 0;  // buffers handed out in all
  uint64_t waited = 0;    // acquisitions that had to wait for a buffer to come back
};

template <class Buffer>
class StagingPool {
 public:
  using Allocate = std::function<std::unique_ptr<Buffer>(size_t bytes)>;
  using WaitReusable = std::function<void(Buffer&)>;

  StagingPool(size_t chunk_bytes, size_t max_buffers, Allocate allocate, WaitReusable wait_reusable)
      : allocate_(std::move(allocate)), wait_reusable_(std::move(wait_reusable)) {
    if (chunk_bytes == 0 || max_buffers == 0) {
      throw std::invalid_argument("panama: staging needs a chunk size and at least one buffer");
    }
    stats_.chunk_bytes = chunk_bytes;
    stats_.max_buffers = max_buffers;
  }

  size_t chunk_bytes() const { return stats_.chunk_bytes; }

  // A buffer of chunk_bytes() bytes: a free one, a new one while fewer than
  // max_buffers exist, or else the oldest one to come back (blocks until one
  // does). Throws std::runtime_error once close() was called.
  Buffer* acquire() {
    std::unique_lock<std::mutex> lk(mu_);
    Buffer* b = nullptr;
    if (free_.empty() && all_.size() < stats_.max_buffers) {
      all_.push_back(allocate_(stats_.chunk_bytes));
      ++stats_.allocated;
      b = all_.back().get();
    } else {
      if (free_.empty()) ++stats_.waited;
      cv_.wait(lk, [&] { return !free_.empty() || closed_; });
      if (closed_) throw std::runtime_error("panama: the staging pool was closed");
      b = free_.front();
      free_.pop_front();
    }
    ++stats_.in_use;
    ++stats_.acquired;
    stats_.max_in_use = std::max(stats_.max_in_use, stats_.in_use);
    lk.unlock();
    if (wait_reusable_) wait_reusable_(*b);  // its last asynchronous copy has finished
    return b;
  }

  void release(Buffer* b) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      free_.push_back(b);
      --stats_.in_use;
    }
    cv_.notify_one();
  }

  // Wakes and fails every waiting acquire().
  void close() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  StagingPoolStats stats() const {
    std::lock_guard<std::mutex> lk(mu_);
    return stats_;
  }

 private:
  Allocate allocate_;
  WaitReusable wait_reusable_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Buffer>> all_;
  std::deque<Buffer*> free_;  // oldest first
  StagingPoolStats stats_;
  bool closed_ = false;
};

// How a staged allreduce of `count` elements of `elem_bytes` bytes is cut:
// chunks of as many elements as fill chunk_bytes, rounded down to whole
// packets (elems_per_packet) when a chunk holds at least one packet, so
// that only the last chunk has a short packet.
struct ChunkPlan {
  size_t chunk_elems = 0;
  size_t chunks = 0;
  size_t elems_of(size_t chunk, size_t count) const {
    const size_t first = chunk * chunk_elems;
    return std::min(count, first + chunk_elems) - first;
  }
};

inline ChunkPlan plan_chunks(size_t count, size_t elem_bytes, size_t chunk_bytes, size_t elems_per_packet) {
  ChunkPlan p;
  size_t per = chunk_bytes / elem_bytes;
  if (per == 0) throw std::invalid_argument("panama: staging chunk smaller than one element");
  if (elems_per_packet > 0 && per >= elems_per_packet) per -= per % elems_per_packet;
  p.chunk_elems = per;
  p.chunks = count == 0 ? 0 : (count + per - 1) / per;
  return p;
}

}  // namespace panama::torch_backend
