// Shared device for device-vs-reference tests.
#include "tests/support/test_device.hpp"

#include <cstdlib>
#include <memory>

namespace rtf::test {

Device& test_device() {
  static std::unique_ptr<Device> device = [] {
    const char* spec = std::getenv("RTFMRI_DEVICE");
    return Device::open(spec ? spec : "");
  }();
  return *device;
}

}  // namespace rtf::test
