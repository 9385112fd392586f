// The glue of a command spread over devices and MPI ranks (randomise, connectome, bedpost, glm --bayes, batch;
// docs/scale.md), written once: the devices opened while the inputs are read, rank 0's input files as paths every rank
// can read, chunk jobs run with their statistics kept, the "devices" object of the commands' JSON reports, and rank 0
// committing the outputs, after which the chunk files kept for a restart are removed. What a command computes goes in
// its ChunkJob (core/scale/chunk_job.hpp), keyed by job_key (core/scale/job_key.hpp).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/io/output_set.hpp"
#include "core/scale/chunk_job.hpp"
#include "core/scale/workers_opening.hpp"

namespace rtf {

class ScaleOut {
 public:
  // Begins opening the devices on a background thread.
  explicit ScaleOut(const DeviceChoice& choice);

  const Ranks& ranks() const { return Ranks::world(); }
  bool root() const { return ranks().root(); }
  // Rank 0's input file or folder as a path this rank can read (Ranks::local_input; every rank calls it for the same
  // paths in the same order); an empty path (an option not given) stays empty.
  std::string input(const std::string& path) const;

  // The devices and ranks: the first call waits for the opening (and logs the devices).
  Workers& workers();

  // Runs `job` on the workers (Workers::run): rank 0 gets every chunk's result in chunk order, other ranks nothing.
  // The job's counts and times are kept (stats()).
  std::vector<ChunkBytes> run(const ChunkJob& job, const ChunkProgress& progress = {});
  const ChunkJobStats& stats() const { return stats_; }

  // "Where it ran" of the last job for a JSON report (it differs between runs of the same result, so reports keep it
  // under one key): devices in all, ranks, chunks, voxels per chunk, chunks per device [rank][slot], chunks restored
  // from files, rank 0's devices. Collective: every rank calls it.
  nlohmann::json devices_report(int64_t chunks, int64_t chunk_voxels);

  // Rank 0, once every output is written: commits `outputs` (every file under its final name at once), then removes
  // the chunk files that are no longer needed: the folder `chunks` whole (a folder of the command's own), or with
  // only_chunk_files the chunk files in it (a folder the user named keeps whatever else it holds). Empty: none.
  void commit(io::OutputSet& outputs, const std::filesystem::path& chunks, bool only_chunk_files = false) const;

 private:
  WorkersOpening opening_;
  std::optional<Workers> workers_;
  ChunkJobStats stats_;
};

}  // namespace rtf
