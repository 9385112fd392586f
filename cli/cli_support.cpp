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

}  // namespace rtf::cli
