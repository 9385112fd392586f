// DropOldestQueue: the bounded hand-off from ingest (which must never wait) to later stages. push() never
// blocks: when the queue is full the oldest waiting item is discarded and counted, so a consumer that falls
// behind always gets the newest volumes. With a key (the run of a volume), the item dropped is the oldest of the key
// with the most items waiting, so a flood of one or many other runs never pushes out the few volumes of a run that
// sends at the scanner's pace. Safe for one or more producers and consumers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace rtf::stream {

template <typename T>
class DropOldestQueue {
 public:
  // What an item belongs to (e.g. its run); the view must stay valid while the item is in the queue.
  using KeyOf = std::function<std::string_view(const T&)>;

  explicit DropOldestQueue(size_t capacity, KeyOf key = {})
      : capacity_(capacity == 0 ? 1 : capacity), key_(std::move(key)) {}

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
        items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(victim()));
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
  // The position of the item to drop: the oldest, or with a key, the oldest of the key with the most items waiting
  // (ties: the key whose oldest item is older). Called with the lock held on a full queue (capacity items).
  size_t victim() const {
    if (!key_) return 0;
    std::vector<std::pair<std::string_view, size_t>> counts;  // key, items; in the order of their oldest item
    for (const T& item : items_) {
      const std::string_view k = key_(item);
      auto it = counts.begin();
      while (it != counts.end() && it->first != k) ++it;
      if (it == counts.end()) {
        counts.emplace_back(k, 1);
      } else {
        ++it->second;
      }
    }
    size_t best = 0;
    for (size_t i = 1; i < counts.size(); ++i) {
      if (counts[i].second > counts[best].second) best = i;
    }
    for (size_t i = 0; i < items_.size(); ++i) {
      if (key_(items_[i]) == counts[best].first) return i;
    }
    return 0;
  }

  const size_t capacity_;
  const KeyOf key_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
  bool closed_ = false;
  int64_t pushed_ = 0;
  int64_t dropped_ = 0;
};

}  // namespace rtf::stream
