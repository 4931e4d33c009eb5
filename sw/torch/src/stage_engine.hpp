// The copies of the staged pipeline (staging_pool.hpp), by device. The
// pipeline itself (chunking, the pool, issuing chunks in order, completing
// the Work) is the same for every device; an engine only moves bytes between
// the tensor and a host buffer and says when a buffer can be reused:
//
// - CpuStageEngine: synchronous copies between a CPU tensor and ordinary
//   host buffers. The backend uses it only when staging is forced
//   (Options.stage_cpu / PANAMA_STAGE_CPU=1), so that the pipeline the CUDA
//   path runs is tested on a machine without a GPU.
// - CudaStageEngine (cuda_stage_engine.hpp, compiled only against a torch
//   built with CUDA): pinned host buffers, copies on a side stream ordered
//   after the caller's current stream, events.
#pragma once

#include <ATen/ATen.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>

namespace panama::torch_backend {

// One host buffer of the pool.
struct StageBuffer {
  at::Tensor host;                // chunk_bytes bytes (kByte), pinned for CUDA
  std::shared_ptr<void> pending;  // engine's: what still reads it (a CUDA event)
  uint8_t* data() { return host.data_ptr<uint8_t>(); }
  // The first `n` elements of the buffer as a CPU tensor of `type`.
  at::Tensor view(at::ScalarType type, size_t n) {
    return at::from_blob(data(), {static_cast<int64_t>(n)}, at::TensorOptions().dtype(type));
  }
};

// What the pipeline knows of one staged collective (the engine may keep its
// own state in `engine_state`).
struct StagedTensor {
  at::Tensor user;    // the caller's tensor
  at::Tensor buffer;  // contiguous, on the same device: `user`, or a copy of it
  std::shared_ptr<void> engine_state;
  // The elements [first, first + n) of `buffer`, flattened.
  at::Tensor slice(size_t first, size_t n) const {
    return buffer.view(-1).narrow(0, static_cast<int64_t>(first), static_cast<int64_t>(n));
  }
};

class StageEngine {
 public:
  virtual ~StageEngine() = default;
  virtual std::string name() const = 0;
  virtual std::unique_ptr<StageBuffer> allocate(size_t bytes) = 0;
  // Caller's thread, when the collective is issued: what the copies must
  // come after (CUDA: the caller's current stream).
  virtual void begin(StagedTensor&) {}
  // Device to host: elements [first, first + n) into `b`; returns once the
  // bytes are in `b` (the runtime reads them next).
  virtual void copy_out(StagedTensor& t, size_t first, size_t n, StageBuffer& b) = 0;
  // Host to device: the reduced elements back into the tensor; may return
  // before the copy is done (reusable() waits for it).
  virtual void copy_in(StagedTensor& t, size_t first, size_t n, StageBuffer& b) = 0;
  // Blocks until nothing reads `b` any more.
  virtual void reusable(StageBuffer&) {}
  // Every chunk is in: copy a non-contiguous caller's tensor back, mark the end.
  virtual void finish(StagedTensor& t) {
    if (!t.buffer.is_same(t.user)) t.user.copy_(t.buffer);
  }
  // Runs the Work's completion (its Future's markCompleted, whose callbacks
  // run inline) as the device needs it (CUDA: with the side stream current,
  // so that the Future's events follow the copies).
  virtual void complete(StagedTensor&, const std::function<void()>& f) { f(); }
  // Work::wait()/synchronize() on the caller's thread (CUDA: the caller's
  // current stream waits for the end of the copies).
  virtual void on_wait(StagedTensor&) {}
};

class CpuStageEngine : public StageEngine {
 public:
  std::string name() const override { return "cpu"; }
  std::unique_ptr<StageBuffer> allocate(size_t bytes) override {
    auto b = std::make_unique<StageBuffer>();
    b->host = at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte));
    return b;
  }
  void copy_out(StagedTensor& t, size_t first, size_t n, StageBuffer& b) override {
    const size_t eb = t.buffer.element_size();
    std::memcpy(b.data(), static_cast<const uint8_t*>(t.buffer.data_ptr()) + first * eb, n * eb);
  }
  void copy_in(StagedTensor& t, size_t first, size_t n, StageBuffer& b) override {
    const size_t eb = t.buffer.element_size();
    std::memcpy(static_cast<uint8_t*>(t.buffer.data_ptr()) + first * eb, b.data(), n * eb);
  }
};

}  // namespace panama::torch_backend
