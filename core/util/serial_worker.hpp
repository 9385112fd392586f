// SerialWorker: runs submitted jobs one at a time, in submission order, on one thread of its own. For work that a
// thread which must not wait hands off (e.g. writing each closed run's NIfTI): however many jobs arrive, one thread
// and the files of one job are in use at a time. The destructor finishes every job already submitted, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

namespace rtf {

class SerialWorker {
 public:
  SerialWorker() : thread_([this] { loop(); }) {}
  ~SerialWorker() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  // Queues `job`; its result (or exception) arrives through the future.
  template <typename F>
  auto submit(F job) -> std::future<std::invoke_result_t<F>> {
    auto task = std::make_shared<std::packaged_task<std::invoke_result_t<F>()>>(std::move(job));
    auto result = task->get_future();
    {
      std::lock_guard lock(mutex_);
      jobs_.emplace_back([task] { (*task)(); });
    }
    ready_.notify_one();
    return result;
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, and nothing left
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace rtf
