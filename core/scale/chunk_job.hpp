// Spreading a command's work over this process's devices and the job's ranks (docs/scale.md). The work is cut into
// chunks whose results do not depend on where they run (streams keyed by global indices); three quarters of the chunks
// are dealt to ranks in turn (rank r takes every K-th), the rest rank 0 hands out one at a time to a rank whose
// devices are running out of work (so ranks of unequal speed end together), and within a rank each device's thread
// takes the next chunk
// from a shared queue; at the end a fast device takes a backup copy of a chunk a much slower one is still on (a GPU
// beside PoCL: core/scale/chunk_schedule.hpp), so it never waits on it. Results go to rank 0, which returns them in
// chunk order; with a chunk folder, rank 0 also keeps each result as a file there as it arrives (written whole or
// not at all, checked by hash when read), and a job run again over the same folder skips the chunks found there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device/device.hpp"
#include "core/scale/chunk_bytes.hpp"
#include "core/scale/ranks.hpp"

namespace rtf {

struct ChunkJob {
  std::string name;  // for the log: "bedpost voxels", "randomise contrast 1"
  int64_t chunks = 0;
  // Identifies the inputs and every option that changes a result (a hash): chunk files of another key are ignored.
  std::string key;
  // Given, each chunk's file is also tied to chunk_key(chunk) (e.g. that chunk's own input), so a change to one
  // chunk's input makes only that chunk computed again.
  std::function<std::string(int64_t chunk)> chunk_key;
  std::filesystem::path chunk_dir;  // empty: no chunk files
  // One chunk on one device. `slot` numbers this process's devices 0 .. D-1; each slot is used by one thread at a
  // time, so per-device state (uploaded data, kernels) may live in a vector indexed by slot. May throw: the job then
  // stops with the error, naming the device and where it ran. Should call throw_if_chunk_cancelled() between its
  // launches (a backup copy elsewhere may have finished the chunk).
  std::function<ChunkBytes(Device& device, int slot, int64_t chunk)> compute;
  // Given, rank 0 hands each result to it as it arrives (restored ones first), on the thread that called run; with
  // keep_results false run then returns empty entries (results too large to hold together: write them out here).
  std::function<void(int64_t chunk, const ChunkBytes& bytes)> on_result;
  bool keep_results = true;
  // With in_order, on_result gets the results in chunk order instead (one that comes early is held until those before
  // it have come): for results merged in order, e.g. a connectome's sorted edges.
  bool in_order = false;
};

// Thrown by throw_if_chunk_cancelled, which ChunkJob::compute calls between its launches: another device finished
// this chunk first. Not a std::exception, so that no handler of errors takes it for one.
struct ChunkCancelled {};
void throw_if_chunk_cancelled();

// Chunks done (restored ones included) of all, on rank 0.
using ChunkProgress = std::function<void(int64_t done, int64_t total)>;

struct ChunkJobStats {
  int64_t restored = 0;                // chunks read back from the chunk folder
  std::vector<int64_t> device_chunks;  // this process's chunks per device slot
  std::vector<double> device_seconds;  // and the time each device spent computing
  double seconds = 0.0;                // wall time of the job on this rank
};

// This process's devices and the job's ranks.
class Workers {
 public:
  Workers(std::vector<std::unique_ptr<Device>> devices, const Ranks& ranks);
  int device_count() const { return static_cast<int>(devices_.size()); }
  Device& device(int slot) { return *devices_.at(static_cast<size_t>(slot)); }
  const Ranks& ranks() const { return ranks_; }
  // Devices over every rank of the job (for sizing chunks whose boundaries change no result).
  int total_devices() const { return total_devices_; }
  bool root() const { return ranks_.root(); }
  // "2 devices (...) on each of 3 ranks" for the log.
  std::string describe() const;

  // Runs every chunk of `job`. Rank 0 gets every chunk's result in chunk order; other ranks get an empty vector. A
  // failure anywhere ends the whole job: an exception on this rank (with MPI: MPI_Abort after the message), never a
  // hang. `stats`, given, receives this rank's counts and times.
  std::vector<ChunkBytes> run(const ChunkJob& job, const ChunkProgress& progress = {}, ChunkJobStats* stats = nullptr);

 private:
  std::vector<std::unique_ptr<Device>> devices_;
  const Ranks& ranks_;
  int total_devices_ = 1;
};

}  // namespace rtf
