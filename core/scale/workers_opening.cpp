// WorkersOpening: the device list of --devices (or the one device of --device) opened by std::async, then joined to
// Ranks::world(); chunks_per_device: one sum over the ranks per slot.
#include "core/scale/workers_opening.hpp"

#include <spdlog/spdlog.h>

#include "core/scale/device_list.hpp"

namespace rtf {

namespace {

std::vector<std::unique_ptr<Device>> open_worker_devices(const DeviceChoice& choice) {
  if (!choice.devices.empty()) return open_devices(choice.devices);
  std::vector<std::unique_ptr<Device>> devices;
  devices.push_back(Device::open(choice.device));
  return devices;
}

}  // namespace

WorkersOpening::WorkersOpening(const DeviceChoice& choice)
    : devices_(std::async(std::launch::async, [choice] { return open_worker_devices(choice); })) {}

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

}  // namespace rtf
