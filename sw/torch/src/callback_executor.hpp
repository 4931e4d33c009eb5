// Where the `panama` backend runs Future completions (and so every callback
// chained to a Work's future: DDP's bucket copy-back, communication hooks,
// torch.futures `then`): never on a thread the backend needs to make
// progress. A callback may issue another collective and wait for it
// (PowerSGD's hook does, at every compressed step); that collective's
// completion then runs on another thread of this executor, started when no
// idle one is left, so a waiting callback never waits on itself.
//
// Torch-free on purpose (docs/pytorch.md, "How it works").
#pragma once

#include <pthread.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace panama::torch_backend {

class CallbackExecutor {
 public:
  // At most `max_threads` threads (callbacks nested deeper than that wait
  // for one to become free).
  explicit CallbackExecutor(size_t max_threads = 64) : max_threads_(max_threads) {}
  ~CallbackExecutor() { stop(); }
  CallbackExecutor(const CallbackExecutor&) = delete;
  CallbackExecutor& operator=(const CallbackExecutor&) = delete;

  // Runs `task` on an idle thread of the executor, or on a new one when every
  // thread is busy (e.g. inside a callback that waits for another collective).
  void post(std::function<void()> task) {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopped_) return;
    queue_.push_back(std::move(task));
    if (idle_ >= queue_.size()) {
      cv_.notify_one();
    } else if (threads_.size() < max_threads_) {
      threads_.emplace_back([this] { run(); });
      peak_ = std::max(peak_, threads_.size());
    }
  }

  // Runs what is queued, then joins every thread. Idempotent. Called from one
  // of the executor's own threads (a callback destroying the process group),
  // that thread is detached instead of joined.
  void stop() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lk(mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (std::thread& t : threads) {
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();
      } else if (t.joinable()) {
        t.join();
      }
    }
    std::lock_guard<std::mutex> lk(mu_);
    stopped_ = true;
  }

  size_t threads_started() const {
    std::lock_guard<std::mutex> lk(mu_);
    return peak_;
  }

 private:
  void run() {
    pthread_setname_np(pthread_self(), "panama-callback");
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lk, [&] { return !queue_.empty() || stopping_; });
      --idle_;
      if (queue_.empty()) return;  // stopping and drained
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lk.unlock();
      task();
      // Destroyed before the lock is taken again: the task may hold the last
      // reference to a tensor whose destruction takes the GIL, while a thread
      // holding the GIL asks this executor something (stats()).
      task = nullptr;
      lk.lock();
    }
  }

  const size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  size_t peak_ = 0;
  bool stopping_ = false;
  bool stopped_ = false;
};

}  // namespace panama::torch_backend
