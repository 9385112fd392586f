// Helpers shared by subcommands: opening the selected device (logged), timing, grid checks, writing per-voxel values.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command_registry.hpp"
#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/scale/chunk_job.hpp"

namespace rtf::cli {

// Opens the device chosen by --device / $RTFMRI_DEVICE (else GPU, else CPU) and logs which one.
std::unique_ptr<Device> open_device(const GlobalOptions& globals);

// The devices of --devices (else the one of --device) and the job's ranks (MPI when run by mpirun/srun), logged.
Workers open_workers(const GlobalOptions& globals);

// open_workers begun on a background thread when a command starts, so that opening the devices (the OpenCL drivers'
// start and a context per device: 1.1 s for one H100, 1.6 s for four) overlaps reading the inputs; get() waits for it
// and rethrows its error. Destroyed without get() (an input error thrown first), it waits for the opening to end.
class WorkersOpening {
 public:
  explicit WorkersOpening(const GlobalOptions& globals);
  Workers get();

 private:
  std::future<std::vector<std::unique_ptr<Device>>> devices_;
};

// Every rank's chunks per device after a job, [rank][slot], for the JSON reports (collectives: every rank calls it).
nlohmann::json chunks_per_device(const Ranks& ranks, const ChunkJobStats& stats);

// CLI11's existence checks made on rank 0 alone under mpirun/srun: the other ranks read rank 0's inputs through
// Ranks::local_input and need not see the paths (hosts without a shared file system).
CLI::Validator existing_file_on_rank_zero();
CLI::Validator existing_directory_on_rank_zero();

// Throws std::invalid_argument naming both files when `other` is not on the same voxel grid as `ref`.
void require_same_grid(const ImageHeader& ref, const std::string& ref_name, const ImageHeader& other,
                       const std::string& other_name);

// Writes a 3D float NIfTI on `grid` with values[k] at voxel voxels[k] (full-grid index, x fastest) and 0 elsewhere.
void write_voxel_values(const std::string& path, const ImageHeader& grid, const std::vector<int64_t>& voxels,
                        const std::vector<double>& values);

class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Progress of a long loop on the log: "WHAT done/total, elapsed s, about N s left", at most once per `every` seconds
// and at the end. Call it with the work done so far.
class ProgressLog {
 public:
  explicit ProgressLog(std::string what, double every = 1.0) : what_(std::move(what)), every_(every) {}
  void operator()(int64_t done, int64_t total);

 private:
  std::string what_;
  double every_;
  Stopwatch clock_;
  double last_ = 0.0;
};

}  // namespace rtf::cli

namespace rtf::cli {

// The `rtfmri sim` group (created on first use), to which `sim replay` and `sim phantom` add themselves.
CLI::App& sim_group(CLI::App& app);

}  // namespace rtf::cli
