// ctest-label: gpu
// upload_pinned (core/device/pinned_upload.hpp): an array larger than two staging chunks, of a size that is no
// multiple of a chunk, arrives whole (read back bit for bit); a small one goes directly; one larger than the buffer is
// refused.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "core/device/pinned_upload.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

TEST(PinnedUpload, LargeAndSmallArraysArriveWhole) {
  Device& device = test::test_device();
  for (const size_t count : {size_t{1000}, (size_t{2} << 20) * 16 + 12345}) {  // 4 KB; 134 MB: three chunks
    std::vector<float> values(count);
    std::iota(values.begin(), values.end(), 0.5f);
    DeviceBuffer<float> buffer(device, count + 7);
    buffer.fill(device.queue(), -1.0f);
    upload_pinned(device, buffer, std::span<const float>(values));
    const std::vector<float> back = buffer.read_all(device.queue());
    ASSERT_EQ(back.size(), count + 7);
    EXPECT_EQ(std::memcmp(back.data(), values.data(), count * sizeof(float)), 0) << count;
    EXPECT_EQ(back[count], -1.0f);  // nothing written past the array
  }
}

TEST(PinnedUpload, RefusesMoreThanTheBufferHolds) {
  Device& device = test::test_device();
  DeviceBuffer<float> buffer(device, 10);
  const std::vector<float> values(11, 1.0f);
  EXPECT_THROW(upload_pinned(device, buffer, std::span<const float>(values)), std::out_of_range);
}

}  // namespace
}  // namespace rtf
