// Opening the devices of a spread command (--devices, else --device) and joining them to the job's ranks: begun on a
// background thread when the command starts, so that opening them (the OpenCL drivers' start and a context per device:
// 1.1 s for one H100, 1.6 s for four) overlaps reading the inputs. docs/scale.md.
#pragma once

#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/device/device.hpp"
#include "core/scale/chunk_job.hpp"

namespace rtf {

// The global options that choose devices: --device (gpu, cpu, P:D; empty: $RTFMRI_DEVICE, else GPU, else CPU) and
// --devices (several: core/scale/device_list.hpp; empty: --device alone).
struct DeviceChoice {
  std::string device;
  std::string devices;
};

// get() waits for the devices and rethrows the opening's error; it logs "devices: ..." (Workers::describe). Destroyed
// without get() (an input error thrown first), it waits for the opening to end.
class WorkersOpening {
 public:
  explicit WorkersOpening(const DeviceChoice& choice);
  Workers get();

 private:
  std::future<std::vector<std::unique_ptr<Device>>> devices_;
};

// Every rank's chunks per device after a job, [rank][slot], for the JSON reports (collective: every rank calls it).
nlohmann::json chunks_per_device(const Ranks& ranks, const ChunkJobStats& stats);

}  // namespace rtf
