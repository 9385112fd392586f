// DropOldestQueue: the bounded hand-off from ingest (which must never wait) to later stages. push() never
// blocks: when the queue is full the oldest waiting item is discarded and counted, so a consumer that falls
// behind always gets the newest volumes. Safe for one or more producers and consumers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

namespace rtf::stream {

template <typename T>
class DropOldestQueue {
 public:
  explicit DropOldestQueue(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Adds an item; returns false if an older item had to be dropped to make room. After close(), items are
  // discarded (and counted as dropped).
  bool push(T item) {
    bool kept_all = true;
    {
      std::lock_guard lock(mutex_);
      if (closed_) {
        ++dropped_;
        return false;
      }
      if (items_.size() >= capacity_) {
        items_.pop_front();
        ++dropped_;
        kept_all = false;
      }
      items_.push_back(std::move(item));
      ++pushed_;
    }
    ready_.notify_one();
    return kept_all;
  }

  // The oldest item, waiting up to `timeout`; nullopt on timeout, or once closed and empty.
  template <typename Rep, typename Period>
  std::optional<T> pop(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // Wakes consumers; pop() drains what is left and then returns nullopt at once.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }
  size_t capacity() const { return capacity_; }
  int64_t pushed() const {
    std::lock_guard lock(mutex_);
    return pushed_;
  }
  int64_t dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
  }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
  bool closed_ = false;
  int64_t pushed_ = 0;
  int64_t dropped_ = 0;
};

}  // namespace rtf::stream
