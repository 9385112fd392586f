// Workers::run: chunk files read back on rank 0, the rest dealt to ranks in turn, one thread per device taking chunks
// from this rank's queue, results funnelled through the main thread (the only one that talks to MPI) to rank 0.
#include "core/scale/chunk_job.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "core/scale/chunk_files.hpp"
#include "core/scale/chunk_schedule.hpp"

namespace rtf {

namespace {

// Results of a rank's chunks travel with the tag of their job (jobs numbered in the order they run on every rank).
constexpr int kFirstResultTag = 100;
int g_jobs = 0;

// The test hook RTFMRI_CHUNK_LIMIT=N: rank 0 stops with an error after writing N chunk files (a deterministic
// stand-in for a job killed midway). 0: no limit.
int64_t chunk_limit() {
  const char* value = std::getenv("RTFMRI_CHUNK_LIMIT");
  if (value == nullptr) return 0;
  const std::string_view text(value);
  int64_t limit = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), limit);
  if (error != std::errc() || end != text.data() + text.size() || limit < 0) {
    throw std::invalid_argument(fmt::format("RTFMRI_CHUNK_LIMIT={}: a number of chunk files (0: no limit)", text));
  }
  return limit;
}

// The chunk this thread computes is done elsewhere when *t_cancelled is set (throw_if_chunk_cancelled).
thread_local const std::atomic<bool>* t_cancelled = nullptr;

// What the device threads hand to the main thread.
struct Mailbox {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::pair<int64_t, ChunkBytes>> finished;
  std::condition_variable settled;  // a device thread took a chunk or began to wait for one
  int running = 0;
  int idle = 0;  // device threads waiting for a chunk
  int busy = 0;  // device threads computing a chunk
  bool stop = false;
  bool more_may_come = false;  // rank 0 may still hand out a chunk to this rank
  std::string error;           // the first failure, with the device named
};

}  // namespace

void throw_if_chunk_cancelled() {
  if (t_cancelled != nullptr && t_cancelled->load()) throw ChunkCancelled{};
}

Workers::Workers(std::vector<std::unique_ptr<Device>> devices, const Ranks& ranks)
    : devices_(std::move(devices)), ranks_(ranks) {
  if (devices_.empty()) throw std::invalid_argument("no device to work on");
  total_devices_ = static_cast<int>(ranks_.sum(static_cast<int64_t>(devices_.size())));
}

std::string Workers::describe() const {
  std::string names;
  for (const auto& d : devices_) names += fmt::format("{}{}", names.empty() ? "" : "; ", d->info().label());
  if (ranks_.size() == 1) return fmt::format("{} device(s): {}", devices_.size(), names);
  return fmt::format("{} device(s) over {} ranks; here ({}): {}", total_devices_, ranks_.size(), ranks_.where(), names);
}

std::vector<ChunkBytes> Workers::run(const ChunkJob& job, const ChunkProgress& progress, ChunkJobStats* stats) {
  const int64_t limit = chunk_limit();  // read first: a bad value throws before any thread starts
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const int64_t chunks = job.chunks;
  const bool root = ranks_.root();
  // Three tags per job: results (to rank 0), requests for more chunks (to rank 0), chunks handed out (from rank 0).
  const int tag = kFirstResultTag + 3 * (g_jobs++ % 10000), request_tag = tag + 1, deal_tag = tag + 2;
  std::vector<ChunkBytes> results(root ? static_cast<size_t>(chunks) : 0);
  const auto key_of = [&](int64_t chunk) { return job.chunk_key ? job.key + "/" + job.chunk_key(chunk) : job.key; };
  // Rank 0 reads back the chunks kept by an earlier run and tells every rank which they are.
  ChunkBytes have(static_cast<size_t>(chunks), 0);
  int64_t restored = 0;
  if (root && !job.chunk_dir.empty()) {
    int64_t ignored = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      std::string why;
      if (auto bytes = read_chunk_file(job.chunk_dir, key_of(c), c, &why)) {
        results[static_cast<size_t>(c)] = std::move(*bytes);
        have[static_cast<size_t>(c)] = 1;
        ++restored;
      } else if (!why.empty()) {
        if (ignored++ == 0) spdlog::warn("{}: {}", chunk_file_path(job.chunk_dir, c).string(), why);
      }
    }
    if (ignored > 0) spdlog::warn("{}: {} chunk file(s) not usable: computed again", job.name, ignored);
    for (int64_t c = 0; c < chunks; ++c) {
      if (have[static_cast<size_t>(c)] == 0) continue;
      if (job.in_order) continue;  // handed over in order with the computed ones (deliver_in_order)
      if (job.on_result) job.on_result(c, results[static_cast<size_t>(c)]);
      if (!job.keep_results) ChunkBytes().swap(results[static_cast<size_t>(c)]);
    }
    if (restored > 0) {
      spdlog::info("{}: restored {} chunk(s) of {} from {}", job.name, restored, chunks, job.chunk_dir.string());
    }
  }
  ranks_.broadcast(have);
  // This rank's share: every K-th of the first three quarters of the chunks still to do. The last quarter stays with
  // rank 0, which hands them out one at a time to the ranks (itself included) whose devices are running out of work,
  // so that ranks of unequal speed, or chunks of unequal time, still end together. One process: all of them.
  std::vector<int64_t> to_do;
  for (int64_t c = 0; c < chunks; ++c) {
    if (have[static_cast<size_t>(c)] == 0) to_do.push_back(c);
  }
  const size_t dealt = ranks_.size() > 1 ? to_do.size() * 3 / 4 : to_do.size();
  std::vector<int64_t> mine;
  mine.reserve(to_do.size());  // chunks handed out later are appended: never reallocated while threads read it
  for (size_t k = 0; k < dealt; ++k) {
    if (static_cast<int>(k % static_cast<size_t>(ranks_.size())) == ranks_.rank()) mine.push_back(to_do[k]);
  }
  std::deque<int64_t> pool;  // rank 0: the chunks not dealt yet
  if (root) pool.assign(to_do.begin() + static_cast<std::ptrdiff_t>(dealt), to_do.end());
  const size_t pooled = to_do.size() - dealt;
  const size_t slots = devices_.size();
  std::vector<int64_t> device_chunks(slots, 0);
  std::vector<double> device_seconds(slots, 0.0);
  Mailbox box;
  std::vector<double> peaks;
  for (const auto& d : devices_) peaks.push_back(relative_peak(d->info()));
  ChunkSchedule schedule(mine.size(), slots, peaks, mine.size() + pooled);  // guarded by box.mutex
  // Whether rank 0 may still hand this rank a chunk (the devices wait for it rather than stop).
  box.more_may_come = pooled > 0;
  const auto since_start = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  std::vector<std::thread> threads;
  box.running = static_cast<int>(slots);
  for (size_t slot = 0; slot < slots; ++slot) {
    threads.emplace_back([&, slot] {
      Device& device = *devices_[slot];
      for (;;) {
        std::optional<size_t> k;
        {
          std::unique_lock lock(box.mutex);
          if (box.stop) break;
          k = schedule.take(slot, since_start());
          if (!k && (schedule.running_elsewhere(slot) || box.more_may_come)) {  // look again soon: a backup may
                                                                                // become worth it, a chunk may come
            ++box.idle;
            box.settled.notify_all();
            box.changed.wait_for(lock, std::chrono::milliseconds(20));
            --box.idle;
            continue;
          }
          if (k) {
            ++box.busy;
            box.settled.notify_all();
          }
        }
        if (!k) break;
        const int64_t chunk = mine[*k];
        const double started_at = since_start();
        try {
          const auto t0 = Clock::now();
          t_cancelled = &schedule.done(*k);
          ChunkBytes bytes = job.compute(device, static_cast<int>(slot), chunk);
          t_cancelled = nullptr;
          const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
          spdlog::debug("{}: chunk {} on device {}: {:.3f} s (started at {:.3f} s)", job.name, chunk, slot, seconds,
                        started_at);
          std::lock_guard lock(box.mutex);
          --box.busy;
          device_seconds[slot] += seconds;
          if (schedule.finish(*k, slot, seconds)) {
            ++device_chunks[slot];
            box.finished.emplace_back(chunk, std::move(bytes));
          }
        } catch (const ChunkCancelled&) {  // another device finished it first
          t_cancelled = nullptr;
          std::lock_guard lock(box.mutex);
          --box.busy;
          schedule.abandon(*k, slot, since_start() - started_at);
        } catch (const std::exception& e) {
          t_cancelled = nullptr;
          std::lock_guard lock(box.mutex);
          --box.busy;
          if (box.error.empty()) {
            box.error = fmt::format("{}: chunk {} failed on device {} ({}): {}", job.name, chunk, slot,
                                    device.info().label(), e.what());
          }
          box.stop = true;
        }
        box.changed.notify_all();
      }
      std::lock_guard lock(box.mutex);
      --box.running;
      box.changed.notify_all();
      box.settled.notify_all();
    });
  }
  const auto join_all = [&] {
    {
      std::lock_guard lock(box.mutex);
      box.stop = true;
    }
    for (std::thread& t : threads) t.join();
  };
  int64_t received = 0, written = 0;
  const int64_t expected = root ? chunks - restored : 0;
  // in_order: each result goes to on_result once every chunk before it has (a result that comes early waits here).
  int64_t next_in_order = 0;
  const auto deliver_in_order = [&] {
    for (; next_in_order < chunks && have[static_cast<size_t>(next_in_order)] != 0; ++next_in_order) {
      auto& bytes = results[static_cast<size_t>(next_in_order)];
      if (job.on_result) job.on_result(next_in_order, bytes);
      if (!job.keep_results) ChunkBytes().swap(bytes);
    }
  };
  if (root && job.in_order) deliver_in_order();  // the restored chunks at the front
  std::function<void()> answer_requests;         // rank 0 with pooled chunks: deal() below
  try {
    const auto accept = [&](int64_t chunk, ChunkBytes bytes) {
      if (chunk < 0 || chunk >= chunks || have[static_cast<size_t>(chunk)] != 0) {
        throw std::runtime_error(fmt::format("{}: chunk {} arrived twice or out of range", job.name, chunk));
      }
      if (!job.chunk_dir.empty() && answer_requests) {
        // The file written on another thread while this one answers the other ranks' requests for pooled chunks:
        // under mpirun 4, bedpost's ranks waited ~0.6 s for their second block behind rank 0 writing 135 MB ones.
        auto writing =
            std::async(std::launch::async, [&] { write_chunk_file(job.chunk_dir, key_of(chunk), chunk, bytes); });
        while (writing.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) answer_requests();
        writing.get();
        ++written;
      } else if (!job.chunk_dir.empty()) {
        write_chunk_file(job.chunk_dir, key_of(chunk), chunk, bytes);
        ++written;
      }
      have[static_cast<size_t>(chunk)] = 1;
      if (job.in_order) {
        results[static_cast<size_t>(chunk)] = std::move(bytes);
        deliver_in_order();
      } else {
        if (job.on_result) job.on_result(chunk, bytes);
        if (job.keep_results) results[static_cast<size_t>(chunk)] = std::move(bytes);
      }
      ++received;
      if (progress) progress(restored + received, chunks);
      if (limit > 0 && written >= limit && received < expected) {
        throw std::runtime_error(
            fmt::format("{}: stopped after {} chunk file(s), as RTFMRI_CHUNK_LIMIT asks", job.name, written));
      }
    };
    // The pooled chunks: rank 0 answers each request with a chunk, or -1 once the pool is empty (that rank is then
    // "closed" and asks no more); a rank asks (rank 0 takes from the pool) when it has fewer unstarted chunks than
    // devices waiting for one, one request at a time. (Asking ahead, while every device was busy, let rank 0 take the
    // last pooled chunk of a short job at once, before a rank with nothing dealt to it could ask: 4 ranks, 4 chunks,
    // rank 0 ran 2 and rank 3 none.)
    int closed = 0;
    bool asked = false;
    const auto hand_over = [&](int64_t chunk) {  // a chunk for this rank's devices, or -1: no more will come
      std::lock_guard lock(box.mutex);
      if (chunk < 0) {
        box.more_may_come = false;
      } else {
        mine.push_back(chunk);
        schedule.add();
      }
      box.changed.notify_all();
    };
    const auto running_low = [&] {
      std::lock_guard lock(box.mutex);
      return box.more_may_come && schedule.untaken() < static_cast<size_t>(box.idle);
    };
    const auto deal = [&] {
      if (root) {
        while (auto m = ranks_.poll(request_tag)) {
          int64_t chunk = -1;
          if (!pool.empty()) {
            chunk = pool.front();
            pool.pop_front();
          } else {
            ++closed;
          }
          const auto* p = reinterpret_cast<const uint8_t*>(&chunk);
          ranks_.send(m->from, deal_tag, std::span<const uint8_t>(p, sizeof(chunk)));
        }
        while (running_low()) {
          if (pool.empty()) {
            hand_over(-1);
          } else {
            hand_over(pool.front());
            pool.pop_front();
          }
        }
        return;
      }
      while (auto m = ranks_.poll(deal_tag)) {
        int64_t chunk = -1;
        if (m->bytes.size() != sizeof(chunk)) throw std::runtime_error(job.name + ": a damaged chunk from rank 0");
        std::memcpy(&chunk, m->bytes.data(), sizeof(chunk));
        if (chunk >= chunks) throw std::runtime_error(job.name + ": a chunk from rank 0 out of range");
        hand_over(chunk);
        asked = false;
      }
      if (!asked && running_low()) {
        ranks_.send(0, request_tag, {});
        asked = true;
      }
    };
    if (root && pooled > 0 && ranks_.size() > 1) answer_requests = deal;
    if (root && progress) progress(restored, chunks);
    for (;;) {
      std::deque<std::pair<int64_t, ChunkBytes>> finished;
      bool threads_done = false;
      std::string error;
      {
        std::unique_lock lock(box.mutex);
        // Rank 0 with other ranks wakes now and then to look for their messages, and so does a rank that may still
        // be handed chunks.
        if (ranks_.mpi() && (root || box.more_may_come)) {
          box.changed.wait_for(lock, std::chrono::milliseconds(2),
                               [&] { return !box.finished.empty() || !box.error.empty(); });
        } else {
          box.changed.wait(lock, [&] { return !box.finished.empty() || box.running == 0 || !box.error.empty(); });
        }
        finished.swap(box.finished);
        threads_done = box.running == 0;
        error = box.error;
      }
      if (!error.empty()) throw std::runtime_error(error);
      if (!root && pooled > 0 && !finished.empty()) {
        // The devices that just finished take their next chunk or begin to wait for one within moments: once they
        // have, ask rank 0 for a pooled chunk if one waits, before sending the results (the send of a large result
        // waits until rank 0 receives it; under mpirun 4 bedpost's ranks asked for their pooled block 0.2-0.5 s late).
        {
          std::unique_lock lock(box.mutex);
          box.settled.wait_for(lock, std::chrono::milliseconds(50),
                               [&] { return box.busy + box.idle >= box.running || box.stop; });
        }
        deal();
        // And the answer taken before the send, too: it would otherwise wait behind it (rank 0 answers requests
        // between the results it receives and while it writes chunk files). At most 2 s, then the send goes first.
        for (const auto asked_at = Clock::now(); asked && Clock::now() - asked_at < std::chrono::seconds(2);) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          deal();
        }
      }
      for (auto& [chunk, bytes] : finished) {
        if (root) {
          accept(chunk, std::move(bytes));
        } else {
          // The result with its chunk index after it: no copy of a large result into a new message.
          const size_t size = bytes.size();
          bytes.resize(size + sizeof(chunk));
          std::memcpy(bytes.data() + size, &chunk, sizeof(chunk));
          ranks_.send(0, tag, bytes);
        }
      }
      if (root) {
        while (auto m = ranks_.poll(tag)) {
          int64_t chunk = -1;
          if (m->bytes.size() < sizeof(chunk))
            throw std::runtime_error(job.name + ": a result message without its chunk");
          std::memcpy(&chunk, m->bytes.data() + m->bytes.size() - sizeof(chunk), sizeof(chunk));
          m->bytes.resize(m->bytes.size() - sizeof(chunk));
          accept(chunk, std::move(m->bytes));
        }
      }
      if (pooled > 0) deal();
      if (root) {
        // Every other rank told that nothing is left (else it would wait for a chunk forever).
        if (received == expected && threads_done && (pooled == 0 || closed == ranks_.size() - 1)) break;
      } else if (threads_done) {
        break;
      }
    }
  } catch (...) {
    join_all();
    throw;
  }
  join_all();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (schedule.backups() > 0) {
    spdlog::debug("{}: {} backup cop(ies) of chunks on faster devices, {} finished too late", job.name,
                  schedule.backups(), schedule.wasted());
  }
  for (size_t slot = 0; slot < slots; ++slot) {
    spdlog::debug("{}: device {} ({}): {} chunk(s), {:.2f} s computing", job.name, slot, devices_[slot]->info().label(),
                  device_chunks[slot], device_seconds[slot]);
  }
  if (stats != nullptr) {
    stats->restored = restored;
    stats->device_chunks = device_chunks;
    stats->device_seconds = device_seconds;
    stats->seconds = seconds;
  }
  return results;
}

}  // namespace rtf
