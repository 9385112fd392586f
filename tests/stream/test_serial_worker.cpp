// ctest-label: unit
// SerialWorker: jobs run one at a time, in submission order, on one thread that is not the caller's; results and
// exceptions come back through the futures; the destructor finishes every job already submitted.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/util/serial_worker.hpp"

namespace rtf {
namespace {

TEST(SerialWorker, JobsRunInOrderOneAtATimeOnOneThread) {
  std::vector<int> order;
  std::set<std::thread::id> threads;
  std::atomic<int> running{0};
  std::atomic<int> most_running{0};
  std::vector<std::future<int>> results;
  results.reserve(200);
  SerialWorker worker;
  for (int i = 0; i < 200; ++i) {
    results.push_back(worker.submit([&, i] {
      most_running = std::max(most_running.load(), ++running);
      order.push_back(i);
      threads.insert(std::this_thread::get_id());
      std::this_thread::yield();
      --running;
      return i * i;
    }));
  }
  for (int i = 0; i < 200; ++i) EXPECT_EQ(results[static_cast<size_t>(i)].get(), i * i);
  ASSERT_EQ(order.size(), 200U);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_EQ(most_running.load(), 1);
  ASSERT_EQ(threads.size(), 1U);
  EXPECT_NE(*threads.begin(), std::this_thread::get_id());
}

TEST(SerialWorker, AnExceptionReachesTheFutureAndLaterJobsStillRun) {
  SerialWorker worker;
  auto failed = worker.submit([]() -> int { throw std::runtime_error("disk full"); });
  auto next = worker.submit([] { return 7; });
  EXPECT_THROW(failed.get(), std::runtime_error);
  EXPECT_EQ(next.get(), 7);
}

TEST(SerialWorker, DestructionFinishesEveryJobSubmitted) {
  std::atomic<int> done{0};
  {
    SerialWorker worker;
    for (int i = 0; i < 50; ++i) {
      worker.submit([&done] {
        std::this_thread::yield();
        ++done;
      });  // futures dropped: nothing waits for them here
    }
  }
  EXPECT_EQ(done.load(), 50);
}

}  // namespace
}  // namespace rtf
