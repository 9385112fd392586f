// Device opening and grid checks for subcommands.
#include "cli/cli_support.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "core/io/nifti_io.hpp"
#include "core/scale/device_list.hpp"

namespace rtf::cli {

std::unique_ptr<Device> open_device(const GlobalOptions& globals) {
  // Commands that do not spread their work (core/scale) run on rank 0 alone under mpirun: the others end here.
  const Ranks& ranks = Ranks::world();
  if (ranks.mpi() && ranks.size() > 1) {
    if (!ranks.root()) {
      Ranks::finalize();
      std::exit(0);
    }
    spdlog::warn("this command does not spread over MPI ranks: rank 0 runs it alone");
  }
  std::unique_ptr<Device> device;
  if (globals.devices.empty()) {
    device = Device::open(globals.device);
  } else {
    device = std::make_unique<Device>(resolve_devices(globals.devices).front());
    spdlog::warn("--devices: this command works on one device, the first of '{}'", globals.devices);
  }
  spdlog::info("device: {} [{}]", device->info().label(), device->info().type_name());
  return device;
}

namespace {

std::vector<std::unique_ptr<Device>> open_worker_devices(const GlobalOptions& globals) {
  if (!globals.devices.empty()) return open_devices(globals.devices);
  std::vector<std::unique_ptr<Device>> devices;
  devices.push_back(Device::open(globals.device));
  return devices;
}

}  // namespace

Workers open_workers(const GlobalOptions& globals) {
  return WorkersOpening(globals).get();
}

WorkersOpening::WorkersOpening(const GlobalOptions& globals)
    : devices_(std::async(std::launch::async, [globals] { return open_worker_devices(globals); })) {}

Workers WorkersOpening::get() {
  Workers workers(devices_.get(), Ranks::world());
  spdlog::info("devices: {}", workers.describe());
  return workers;
}

nlohmann::json chunks_per_device(const Ranks& ranks, const ChunkJobStats& stats) {
  nlohmann::json all = nlohmann::json::array();
  for (int r = 0; r < ranks.size(); ++r) {
    const bool me = r == ranks.rank();
    const int64_t slots = ranks.sum(me ? static_cast<int64_t>(stats.device_chunks.size()) : 0);
    nlohmann::json row = nlohmann::json::array();
    for (int64_t k = 0; k < slots; ++k) row.push_back(ranks.sum(me ? stats.device_chunks[static_cast<size_t>(k)] : 0));
    all.push_back(row);
  }
  return all;
}

namespace {

CLI::Validator on_rank_zero(const CLI::Validator& check, const std::string& what) {
  return CLI::Validator([check](std::string& path) { return Ranks::world().root() ? check(path) : std::string(); },
                        what);
}

}  // namespace

CLI::Validator existing_file_on_rank_zero() {
  return on_rank_zero(CLI::ExistingFile, "FILE");
}
CLI::Validator existing_directory_on_rank_zero() {
  return on_rank_zero(CLI::ExistingDirectory, "DIR");
}

void require_same_grid(const ImageHeader& ref, const std::string& ref_name, const ImageHeader& other,
                       const std::string& other_name) {
  if (ref.dims != other.dims) {
    throw std::invalid_argument(fmt::format("{} is {}x{}x{} but {} is {}x{}x{}: they must share one voxel grid",
                                            other_name, other.dims[0], other.dims[1], other.dims[2], ref_name,
                                            ref.dims[0], ref.dims[1], ref.dims[2]));
  }
  if (!ref.same_grid(other, 1e-3)) {
    throw std::invalid_argument(
        fmt::format("{} and {} have the same dimensions but different affines (voxel-to-world)", other_name, ref_name));
  }
}

}  // namespace rtf::cli

namespace rtf::cli {

CLI::App& sim_group(CLI::App& app) {
  for (CLI::App* existing : app.get_subcommands({})) {
    if (existing->get_name() == "sim") return *existing;
  }
  auto* sim = app.add_subcommand("sim", "Scanner simulator: replay a 4D NIfTI to a server, or make a phantom");
  sim->require_subcommand(1);
  return *sim;
}

void write_voxel_values(const std::string& path, const ImageHeader& grid, const std::vector<int64_t>& voxels,
                        const std::vector<double>& values) {
  if (voxels.size() != values.size()) throw std::logic_error("write_voxel_values: sizes differ");
  ImageHeader h = grid;
  h.num_volumes = 1;
  h.tr_s = 0.0;
  h.source_type = DataType::kFloat32;
  Image image(h, 0.0f);
  for (size_t k = 0; k < voxels.size(); ++k)
    image.data()[static_cast<size_t>(voxels[k])] = static_cast<float>(values[k]);
  write_nifti(path, image);
}

void ProgressLog::operator()(int64_t done, int64_t total) {
  const double s = clock_.seconds();
  if ((s - last_ < every_ && done < total) || done <= 0) return;
  last_ = s;
  spdlog::info("{} {}/{}, {:.1f} s, about {:.0f} s left", what_, done, total, s,
               s / static_cast<double>(done) * static_cast<double>(total - done));
}

}  // namespace rtf::cli
