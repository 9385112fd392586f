// How a command's work opens its device: a function it calls once, where it is ready for the device (after reading
// and checking its inputs), so that a bad input fails before any driver starts. The command line passes one that
// opens the device chosen by --device / $RTFMRI_DEVICE and logs it; a test passes one that returns its own.
#pragma once

#include <functional>
#include <memory>

#include "core/device/device.hpp"

namespace rtf {

using DeviceOpener = std::function<std::unique_ptr<Device>()>;

}  // namespace rtf
