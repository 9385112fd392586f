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
#include "core/image/same_grid.hpp"
#include "core/io/voxel_values.hpp"
#include "core/scale/chunk_job.hpp"
#include "core/util/progress_log.hpp"
#include "core/util/stopwatch.hpp"

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

// Moved to core/ (core/image/same_grid.hpp, core/io/voxel_values.hpp, core/util/stopwatch.hpp,
// core/util/progress_log.hpp), where the commands' work now lives; named here for the commands not yet moved.
using rtf::ProgressLog;
using rtf::require_same_grid;
using rtf::Stopwatch;
using rtf::write_voxel_values;

}  // namespace rtf::cli

namespace rtf::cli {

// The `rtfmri sim` group (created on first use), to which `sim replay` and `sim phantom` add themselves.
CLI::App& sim_group(CLI::App& app);

}  // namespace rtf::cli
