// Shared device for device-vs-reference tests.
#include "tests/support/test_device.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

namespace rtf::test {

namespace {

// Empties the device's queues when the test program finishes its tests, before main() returns. Work still queued at
// exit would run during the process's exit handlers (the function-local static below is destroyed there), after the
// OpenCL implementation's own lazily created state may be gone: PoCL then crashed compiling a kernel's work-group
// function for its first launch (a segmentation fault or an LLVM error after "[  PASSED  ]", every time on a cold
// PoCL cache).
class FinishDeviceAtTheEnd : public ::testing::Environment {
 public:
  explicit FinishDeviceAtTheEnd(Device& device) : device_(device) {}
  void TearDown() override { device_.finish(); }

 private:
  Device& device_;
};

}  // namespace

Device& test_device() {
  static std::unique_ptr<Device> device = [] {
    const char* spec = std::getenv("RTFMRI_DEVICE");
    auto d = Device::open(spec ? spec : "");
    ::testing::AddGlobalTestEnvironment(new FinishDeviceAtTheEnd(*d));  // gtest owns and tears it down
    return d;
  }();
  return *device;
}

}  // namespace rtf::test
