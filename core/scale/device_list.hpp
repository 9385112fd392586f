// Several OpenCL devices for one command (the global option --devices): "all" (every device of every platform),
// "gpu", "cpu", or a comma list of entries "P:D", "gpu", "cpu"; any entry may end in "/N" to split that device into
// N equal sub-devices (clCreateSubDevices, CL_DEVICE_PARTITION_EQUALLY: PoCL's CPU device splits by cores).
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
