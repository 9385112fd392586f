// ctest-label: gpu
// ResultArena: buffers of several types taken from one arena, each filled on the device, all come back with one read
// into their host spans (aligned sub-buffers that do not overlap); a take that does not fit is refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <stdexcept>

#include "core/device/result_arena.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

TEST(ResultArena, EveryTakenBufferComesBackWithOneRead) {
  Device& device = test::test_device();
  ResultArena arena(device, 5 * ResultArena::kAlignmentSlack);
  std::span<int> ints;
  std::span<double> doubles;
  std::span<float> floats;
  DeviceBuffer<int> a = arena.take<int>(3, ints);
  DeviceBuffer<double> b = arena.take<double>(17, doubles);
  DeviceBuffer<float> c = arena.take<float>(1, floats);
  ASSERT_EQ(ints.size(), 3u);
  ASSERT_EQ(doubles.size(), 17u);
  ASSERT_EQ(floats.size(), 1u);
  a.fill_async(device.queue(), -7);
  b.fill_async(device.queue(), 2.5);
  c.fill_async(device.queue(), 9.0f);
  arena.enqueue_read();
  RTF_CL_CHECK(clFinish(device.queue()));
  for (const int x : ints) EXPECT_EQ(x, -7);
  for (const double x : doubles) EXPECT_EQ(x, 2.5);
  EXPECT_EQ(floats[0], 9.0f);
  // A second round: the same spans see the new values.
  b.fill_async(device.queue(), -1.0);
  arena.enqueue_read();
  RTF_CL_CHECK(clFinish(device.queue()));
  for (const double x : doubles) EXPECT_EQ(x, -1.0);
  EXPECT_EQ(ints[2], -7);
  EXPECT_LE(arena.used_bytes(), 5 * ResultArena::kAlignmentSlack);
  std::span<int64_t> too_big;
  EXPECT_THROW((void)arena.take<int64_t>(5 * ResultArena::kAlignmentSlack, too_big), std::length_error);
}

}  // namespace
}  // namespace rtf
