// Several OpenCL devices for one command (the global option --devices): "all" (every device of every platform),
// "gpu", "cpu", "local-gpu" (one rank per GPU: the GPU whose number is this rank's index among the ranks of its host,
// modulo the GPUs, from OMPI_COMM_WORLD_LOCAL_RANK / SLURM_LOCALID), or a comma list of such entries and "P:D"; any
// entry may end in "/N" to split that device into N sub-devices with compute units as equal as possible
// (clCreateSubDevices by counts: CPU devices such as PoCL's).
// docs/scale.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/device/device.hpp"
#include "core/device/device_info.hpp"

namespace rtf {

// The devices a spec names, in the order given ("all"/"gpu"/"cpu": platform order). Throws std::invalid_argument for
// a malformed spec, and std::runtime_error naming the spec and the devices there are when it matches none or a device
// cannot be split.
std::vector<DeviceInfo> resolve_devices(const std::string& spec);
std::vector<std::unique_ptr<Device>> open_devices(const std::string& spec);

}  // namespace rtf
