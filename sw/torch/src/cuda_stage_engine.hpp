// CUDA tensors through PANAMA (docs/pytorch.md, "CUDA tensors"): the staged
// pipeline's copies for a device tensor. Included only when the torch found
// at configure time was built with CUDA (PANAMA_TORCH_CUDA=1); Debian's torch
// 1.13 has no CUDA, so this file was not compiled on the development machine.
//
// Stream order: begin() records an event on the caller's current stream and
// makes a side stream (one per collective, from torch's pool) wait for it, so
// the copies read the tensor only after the kernels that produced it. Every
// copy runs on that side stream, between pinned host buffers and the tensor;
// copy_out waits for its chunk's event before the runtime reads the bytes,
// copy_in records an event on the buffer, which the pool waits for before it
// hands the buffer out again. finish() records the end event; Work::wait()
// makes the caller's current stream wait for it, and the Future is completed
// with the side stream current, so its callbacks (DDP's) are ordered after
// the copies too (c10::ivalue::Future with CUDA devices records events on the
// current streams at markCompleted).
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "stage_engine.hpp"

namespace panama::torch_backend {

class CudaStageEngine : public StageEngine {
 public:
  std::string name() const override { return "cuda"; }

  std::unique_ptr<StageBuffer> allocate(size_t bytes) override {
    auto b = std::make_unique<StageBuffer>();
    b->host =
        at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    return b;
  }

  void begin(StagedTensor& t) override {
    const c10::Device dev = t.buffer.device();
    c10::cuda::CUDAGuard guard(dev);
    auto st = std::make_shared<State>(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, dev.index()));
    st->ready.record(c10::cuda::getCurrentCUDAStream(dev.index()));
    st->ready.block(st->stream);
    // The caching allocator must not hand this memory to another tensor
    // before the side stream is done with it, even if the caller frees it.
    c10::cuda::CUDACachingAllocator::recordStream(t.buffer.storage().data_ptr(), st->stream);
    if (!t.buffer.is_same(t.user)) {
      c10::cuda::CUDACachingAllocator::recordStream(t.user.storage().data_ptr(), st->stream);
    }
    t.engine_state = st;
  }

  void copy_out(StagedTensor& t, size_t first, size_t n, StageBuffer& b) override {
    State& st = state(t);
    c10::cuda::CUDAStreamGuard guard(st.stream);
    b.view(t.buffer.scalar_type(), n).copy_(t.slice(first, n), /*non_blocking=*/true);
    at::cuda::CUDAEvent copied;
    copied.record(st.stream);
    copied.synchronize();  // the runtime reads the buffer next
  }

  void copy_in(StagedTensor& t, size_t first, size_t n, StageBuffer& b) override {
    State& st = state(t);
    c10::cuda::CUDAStreamGuard guard(st.stream);
    t.slice(first, n).copy_(b.view(t.buffer.scalar_type(), n), /*non_blocking=*/true);
    auto ev = std::make_shared<at::cuda::CUDAEvent>();
    ev->record(st.stream);
    b.pending = ev;
  }

  void reusable(StageBuffer& b) override {
    if (b.pending) static_cast<at::cuda::CUDAEvent*>(b.pending.get())->synchronize();
    b.pending.reset();
  }

  void finish(StagedTensor& t) override {
    State& st = state(t);
    c10::cuda::CUDAStreamGuard guard(st.stream);
    if (!t.buffer.is_same(t.user)) t.user.copy_(t.buffer, /*non_blocking=*/true);
    st.done.record(st.stream);
  }

  void complete(StagedTensor& t, const std::function<void()>& f) override {
    c10::cuda::CUDAStreamGuard guard(state(t).stream);
    f();
  }

  void on_wait(StagedTensor& t) override {
    State& st = state(t);
    st.done.block(c10::cuda::getCurrentCUDAStream(t.buffer.device().index()));
  }

 private:
  struct State {
    explicit State(c10::cuda::CUDAStream s) : stream(s) {}
    c10::cuda::CUDAStream stream;
    at::cuda::CUDAEvent ready;
    at::cuda::CUDAEvent done;
  };
  static State& state(StagedTensor& t) { return *static_cast<State*>(t.engine_state.get()); }
};

}  // namespace panama::torch_backend
