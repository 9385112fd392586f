// The OpenCL device the gpu-labelled tests run on: $RTFMRI_DEVICE if set, else auto (GPU first,
// else PoCL). Opened once per test process. A machine with no OpenCL device fails these tests
// (CI installs PoCL), rather than silently skipping them.
#pragma once

#include "core/device/device.hpp"

namespace rtf::test {

Device& test_device();

}  // namespace rtf::test
