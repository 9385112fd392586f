// ctest-label: unit
// The scale-out framework in one process (core/scale/): --devices specs resolved (sub-devices of the CPU device,
// errors), Workers::run on two PoCL sub-devices returning every chunk once in chunk order with both devices working, a
// slow device's last chunk taken over by the fast one (backup copy, the slow copy cancelled), the schedule's rule,
// a failing chunk stopping the job with the device and chunk named (no hang), and restarts from chunk files:
// RTFMRI_CHUNK_LIMIT stops a run, the next run restores those chunks and computes only the rest, damaged files and
// files of another job are computed again.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "core/scale/chunk_files.hpp"
#include "core/scale/chunk_job.hpp"
#include "core/scale/chunk_schedule.hpp"
#include "core/scale/device_list.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

// A chunk's result: its index and a few values derived from it, so a misplaced or mixed-up result shows.
ChunkBytes expected_result(int64_t chunk, uint64_t seed) {
  ChunkWriter w;
  w.value(chunk);
  std::vector<double> values(static_cast<size_t>(chunk % 7 + 1));
  for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<double>(seed % 1000) + chunk * 10.0 + k;
  w.values(values);
  return w.take();
}

Workers two_sub_devices() {
  return Workers(open_devices("cpu/2"), Ranks::world());
}

TEST(DeviceList, SplitsTheCpuDeviceAndRefusesBadSpecs) {
  const std::vector<DeviceInfo> two = resolve_devices("cpu/2");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_NE(two[0].device, two[1].device);
  EXPECT_NE(two[0].device_name.find("part 1 of 2"), std::string::npos) << two[0].device_name;
  const std::vector<DeviceInfo> cpus = resolve_devices("cpu");
  ASSERT_GE(cpus.size(), 1u);
  EXPECT_EQ(two[0].compute_units + two[1].compute_units, cpus[0].compute_units);
  // An entry twice: two contexts on one device.
  EXPECT_EQ(resolve_devices("cpu,cpu").size(), 2 * cpus.size());
  EXPECT_THROW(resolve_devices("cpu/x"), std::invalid_argument);
  EXPECT_THROW(resolve_devices("cpu/0"), std::invalid_argument);
  EXPECT_THROW(resolve_devices("cpu,"), std::invalid_argument);
  EXPECT_THROW(resolve_devices("9:9"), std::runtime_error);
  EXPECT_THROW(resolve_devices("banana"), std::runtime_error);
  EXPECT_THROW(resolve_devices("cpu/4096"), std::invalid_argument);
}

TEST(ChunkJob, EveryChunkOnceInOrderOnBothDevices) {
  const uint64_t seed = test::test_seed();
  Workers workers = two_sub_devices();
  ASSERT_EQ(workers.device_count(), 2);
  EXPECT_EQ(workers.total_devices(), 2);
  // The first chunk of each device waits until the other device has started one, so both must take part.
  std::mutex m;
  std::condition_variable cv;
  std::set<int> started;
  std::atomic<int> calls{0};
  std::array<std::atomic<int>, 2> slot_calls{};
  ChunkJob job;
  job.name = "test job";
  job.chunks = 23;
  job.key = "k";
  job.compute = [&](Device& device, int slot, int64_t chunk) {
    EXPECT_EQ(&device, &workers.device(slot));
    ++calls;
    ++slot_calls.at(static_cast<size_t>(slot));
    std::unique_lock lock(m);
    started.insert(slot);
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(60), [&] { return started.size() == 2; });
    return expected_result(chunk, seed);
  };
  std::vector<std::pair<int64_t, int64_t>> progress;
  ChunkJobStats stats;
  const std::vector<ChunkBytes> results = workers.run(
      job, [&](int64_t done, int64_t total) { progress.emplace_back(done, total); }, &stats);
  ASSERT_EQ(results.size(), 23u);
  for (int64_t c = 0; c < 23; ++c) EXPECT_EQ(results[static_cast<size_t>(c)], expected_result(c, seed)) << c;
  EXPECT_GE(calls.load(), 23);  // a backup copy may run a chunk twice; the first result counts
  EXPECT_EQ(started.size(), 2u);
  ASSERT_EQ(stats.device_chunks.size(), 2u);
  EXPECT_EQ(stats.device_chunks[0] + stats.device_chunks[1], 23);  // results that counted
  EXPECT_GE(slot_calls[0].load(), 1);
  EXPECT_GE(slot_calls[1].load(), 1);
  EXPECT_EQ(stats.restored, 0);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), std::make_pair(int64_t{23}, int64_t{23}));
}

// A device that never finishes its chunk on its own (it waits until told that a copy finished): the other device
// takes a backup copy once it has outlasted 1.5 of its mean chunk time, the slow copy is cancelled, and the job ends
// with every result, the slow device credited with none.
TEST(ChunkJob, AFastDeviceTakesOverTheSlowDevicesLastChunk) {
  const uint64_t seed = test::test_seed();
  Workers workers = two_sub_devices();
  std::atomic<int> cancelled{0};
  std::atomic<bool> slow_started{false};
  ChunkJob job;
  job.name = "slow device job";
  job.chunks = 9;
  job.key = "k";
  job.compute = [&](Device&, int slot, int64_t chunk) {
    if (slot == 1) {
      slow_started = true;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      for (;;) {
        try {
          throw_if_chunk_cancelled();
        } catch (const ChunkCancelled&) {
          ++cancelled;
          throw;
        }
        if (std::chrono::steady_clock::now() > give_up) throw std::runtime_error("never cancelled");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    // The fast device starts once the slow one holds a chunk (else it might take them all first).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!slow_started && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return expected_result(chunk, seed);
  };
  ChunkJobStats stats;
  const std::vector<ChunkBytes> results = workers.run(job, {}, &stats);
  for (int64_t c = 0; c < 9; ++c) EXPECT_EQ(results[static_cast<size_t>(c)], expected_result(c, seed)) << c;
  EXPECT_EQ(stats.device_chunks[0], 9);
  EXPECT_EQ(stats.device_chunks[1], 0);
  EXPECT_EQ(cancelled.load(), 1);
}

TEST(ChunkSchedule, BacksUpOnlyWhereItWouldFinishSooner) {
  ChunkSchedule s(4, 2);
  EXPECT_EQ(s.take(0, 0.0), 0u);
  EXPECT_EQ(s.take(1, 0.0), 1u);
  EXPECT_TRUE(s.finish(0, 0, 1.0));
  EXPECT_EQ(s.take(0, 1.0), 2u);
  EXPECT_TRUE(s.finish(2, 0, 1.0));
  EXPECT_EQ(s.take(0, 2.0), 3u);
  EXPECT_TRUE(s.finish(3, 0, 1.0));
  // All started. Slot 1 (speed unknown) has run chunk 1 for 3 s, slot 0 takes 1 s a chunk: back it up.
  EXPECT_TRUE(s.running_elsewhere(0));
  EXPECT_EQ(s.take(0, 3.0), 1u);
  EXPECT_EQ(s.backups(), 1);
  EXPECT_FALSE(s.take(0, 3.0).has_value());  // already running there
  EXPECT_TRUE(s.finish(1, 0, 1.0));
  EXPECT_TRUE(s.done(1).load());
  EXPECT_FALSE(s.finish(1, 1, 4.0));  // the slow copy, too late
  EXPECT_EQ(s.wasted(), 1);
  EXPECT_FALSE(s.running_elsewhere(0));
  // Two devices of one speed: no backup of a chunk that will end within 1.5 chunk times.
  ChunkSchedule t(3, 2);
  t.take(0, 0.0);
  t.take(1, 0.0);
  EXPECT_TRUE(t.finish(0, 0, 1.0));
  EXPECT_TRUE(t.finish(1, 1, 1.0));
  EXPECT_EQ(t.take(0, 1.0), 2u);
  EXPECT_TRUE(t.running_elsewhere(1));
  EXPECT_FALSE(t.take(1, 1.5).has_value());  // slot 0 started it 0.5 s ago and takes 1 s
  EXPECT_EQ(t.backups(), 0);
  // A slot that has finished nothing yet never starts a backup (its speed is unknown).
  ChunkSchedule u(1, 2);
  u.take(0, 0.0);
  EXPECT_FALSE(u.take(1, 100.0).has_value());
}

TEST(ChunkSchedule, ASlowDeviceTakesAChunkOnlyWhenItWouldNotDelayTheEnd) {
  // Slot 1's peak is a tenth of slot 0's (PoCL beside a GPU).
  ChunkSchedule s(30, 2, {10.0, 1.0});
  EXPECT_FALSE(s.take(1, 0.0).has_value());  // nothing measured: the slow one waits
  EXPECT_TRUE(s.running_elsewhere(1));       // ... and looks again later
  EXPECT_EQ(s.take(0, 0.0), 0u);
  EXPECT_TRUE(s.finish(0, 0, 1.0));  // 1 s a chunk on slot 0: slot 1 expected at 10 s
  // 29 left: slot 0 alone needs 29 s, so slot 1's 10 s chunk ends first: take it.
  EXPECT_EQ(s.take(1, 1.0), 1u);
  for (size_t k = 2; k < 24; ++k) {
    EXPECT_EQ(s.take(0, static_cast<double>(k)), k);
    EXPECT_TRUE(s.finish(k, 0, 1.0));
  }
  // 6 left (6 s on slot 0) but slot 1 needs 10: it leaves them.
  EXPECT_FALSE(s.take(1, 24.0).has_value());
  // Measured: slot 1 took 3 s after all, so now it takes one.
  ChunkSchedule t(30, 2, {10.0, 1.0});
  t.take(0, 0.0);
  t.take(1, 0.0);  // declined
  t.finish(0, 0, 1.0);
  EXPECT_EQ(t.take(1, 1.0), 1u);
  EXPECT_TRUE(t.finish(1, 1, 3.0));
  for (size_t k = 2; k < 26; ++k) t.finish(*t.take(0, 2.0), 0, 1.0);
  EXPECT_EQ(t.take(1, 30.0), 26u);  // 4 left, 4 s on slot 0, 3 s here
}

// Four alike devices that finish their first chunks a hair apart (measured on 4 H100s: 4.45-4.56 s): each takes a
// second one. Counting only the chunks left, the second to finish saw the other three as quicker to do the 3 left
// (4.45 s) than its own 4.46 s and left them, and so did the next two: one device ran 4 chunks while two ran 1.
TEST(ChunkSchedule, AlikeDevicesThatFinishTogetherEachTakeOneMore) {
  ChunkSchedule s(8, 4, {1.0, 1.0, 1.0, 1.0});
  for (size_t slot = 0; slot < 4; ++slot) EXPECT_EQ(s.take(slot, 0.0), slot);
  const std::pair<size_t, double> finishes[] = {{1, 4.45}, {3, 4.46}, {0, 4.55}, {2, 4.56}};
  for (const auto& [slot, at] : finishes) {
    EXPECT_TRUE(s.finish(slot, slot, at));
    EXPECT_TRUE(s.take(slot, at).has_value()) << "slot " << slot;
  }
  EXPECT_EQ(s.untaken(), 0u);
}

// Two alike devices, one measured: its estimate for the other, rescaled by equal peaks, may round above its own mean;
// it must still take the last chunk (a state seen livelocked: both waiting for the other).
TEST(ChunkSchedule, OfTwoAlikeDevicesOneAlwaysTakes) {
  for (double mean : {2.2885714285714283e-07, 1e-9, 0.1, 3.3}) {
    ChunkSchedule s(8, 2, {41536.0, 41536.0});
    for (size_t k = 0; k < 7; ++k) s.finish(*s.take(0, 0.0), 0, mean);
    EXPECT_EQ(s.take(0, 1.0), 7u) << mean;
  }
}

TEST(ChunkJob, AFailingChunkStopsTheJobNamingDeviceAndChunk) {
  for (const char* spec : {"cpu", "cpu/2"}) {
    Workers workers(open_devices(spec), Ranks::world());
    ChunkJob job;
    job.name = "failing job";
    job.chunks = 40;
    job.key = "k";
    std::atomic<int> calls{0};
    job.compute = [&](Device&, int, int64_t chunk) -> ChunkBytes {
      ++calls;
      if (chunk == 5) throw std::runtime_error("out of device memory (test)");
      return expected_result(chunk, 1);
    };
    try {
      workers.run(job);
      FAIL() << "the job did not stop";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("failing job: chunk 5 failed on device"), std::string::npos) << what;
      EXPECT_NE(what.find("out of device memory (test)"), std::string::npos) << what;
      EXPECT_NE(what.find(workers.device(0).info().device_name.substr(0, 10)), std::string::npos) << what;
    }
    // One device takes the chunks in order and stops at the failure.
    if (workers.device_count() == 1) {
      EXPECT_EQ(calls.load(), 6);
    }
  }
}

TEST(ChunkJob, RestartsFromItsChunkFiles) {
  const uint64_t seed = test::test_seed();
  test::TempDir dir("rtf-chunks");
  Workers workers = two_sub_devices();
  std::atomic<int> calls{0};
  ChunkJob job;
  job.name = "restartable job";
  job.chunks = 12;
  job.key = "inputs-and-options-hash";
  job.chunk_dir = dir / "chunks";
  job.compute = [&](Device&, int, int64_t chunk) {
    ++calls;
    return expected_result(chunk, seed);
  };
  ::setenv("RTFMRI_CHUNK_LIMIT", "5", 1);
  EXPECT_THROW(
      {
        try {
          workers.run(job);
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("stopped after 5 chunk file(s)"), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);
  ::unsetenv("RTFMRI_CHUNK_LIMIT");
  int64_t files = 0;
  for (int64_t c = 0; c < 12; ++c) files += std::filesystem::exists(chunk_file_path(job.chunk_dir, c)) ? 1 : 0;
  EXPECT_EQ(files, 5);
  // Damage one kept file (a flipped byte in its payload): it is computed again.
  int64_t damaged = -1;
  for (int64_t c = 0; c < 12 && damaged < 0; ++c) {
    if (std::filesystem::exists(chunk_file_path(job.chunk_dir, c))) damaged = c;
  }
  {
    std::fstream f(chunk_file_path(job.chunk_dir, damaged), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x5a');
  }
  calls = 0;
  ChunkJobStats stats;
  const std::vector<ChunkBytes> results = workers.run(job, {}, &stats);
  EXPECT_EQ(stats.restored, 4);
  EXPECT_EQ(calls.load(), 8);
  for (int64_t c = 0; c < 12; ++c) EXPECT_EQ(results[static_cast<size_t>(c)], expected_result(c, seed)) << c;
  // Another job's key: nothing restored.
  job.key = "other-inputs";
  calls = 0;
  workers.run(job, {}, &stats);
  EXPECT_EQ(stats.restored, 0);
  EXPECT_EQ(calls.load(), 12);
}

TEST(ChunkJob, InOrderResultsWaitForTheChunksBeforeThem) {
  // Chunk 0 does not finish before chunk 1 has (the other sub-device's), and chunks 3 and 7 are restored from files:
  // on_result still sees 0, 1, ..., 11 in order, each once, with its own result; keep_results false leaves none.
  const uint64_t seed = test::test_seed();
  test::TempDir dir("rtf-in-order");
  Workers workers = two_sub_devices();
  ChunkJob job;
  job.name = "in-order job";
  job.chunks = 12;
  job.key = "in-order";
  job.chunk_dir = dir / "chunks";
  for (int64_t c : {3, 7}) write_chunk_file(job.chunk_dir, job.key, c, expected_result(c, seed));
  std::mutex mutex;
  std::condition_variable changed;
  bool chunk1_done = false;
  job.compute = [&](Device&, int, int64_t chunk) {
    // Chunk 0 waits for chunk 1 (with a guard: a schedule giving both to one device would only lose the check).
    std::unique_lock lock(mutex);
    if (chunk == 0) changed.wait_for(lock, std::chrono::seconds(60), [&] { return chunk1_done; });
    if (chunk == 1) {
      chunk1_done = true;
      changed.notify_all();
    }
    return expected_result(chunk, seed);
  };
  std::vector<int64_t> order;
  job.keep_results = false;
  job.in_order = true;
  job.on_result = [&](int64_t chunk, const ChunkBytes& bytes) {
    order.push_back(chunk);
    EXPECT_EQ(bytes, expected_result(chunk, seed)) << chunk;
  };
  ChunkJobStats stats;
  const std::vector<ChunkBytes> results = workers.run(job, {}, &stats);
  EXPECT_EQ(stats.restored, 2);
  std::vector<int64_t> expected(12);
  for (int64_t c = 0; c < 12; ++c) expected[static_cast<size_t>(c)] = c;
  EXPECT_EQ(order, expected);
  for (const ChunkBytes& r : results) EXPECT_TRUE(r.empty());
}

TEST(ChunkFiles, RoundTripAndRejectTruncation) {
  test::TempDir dir("rtf-chunkfile");
  const ChunkBytes bytes = expected_result(3, 77);
  write_chunk_file(dir.path(), "key", 3, bytes);
  EXPECT_EQ(read_chunk_file(dir.path(), "key", 3), bytes);
  EXPECT_FALSE(read_chunk_file(dir.path(), "key", 4).has_value());
  EXPECT_FALSE(read_chunk_file(dir.path(), "another key", 3).has_value());
  const auto path = chunk_file_path(dir.path(), 3);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  EXPECT_FALSE(read_chunk_file(dir.path(), "key", 3).has_value());
}

}  // namespace
}  // namespace rtf
