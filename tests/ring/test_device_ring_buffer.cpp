// GPU ring buffer: device contents equal what was sent, for every raw datatype, across wrap-around,
// with out-of-order arrivals inside the window; too-old volumes and wrong sizes are refused; no
// buffer is reallocated by pushes.
// ctest-label: gpu
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "core/ring/device_ring_buffer.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

template <typename T>
std::vector<std::byte> as_bytes(const std::vector<T>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Random voxels of type T for volume `index`, and their float values.
template <typename T>
std::pair<std::vector<std::byte>, std::vector<float>> random_volume(size_t n, std::mt19937_64& rng) {
  std::vector<T> raw(n);
  std::vector<float> expected(n);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      raw[i] = std::uniform_real_distribution<T>(-1e4, 1e4)(rng);
    } else {
      raw[i] = static_cast<T>(std::uniform_int_distribution<int64_t>(
          std::numeric_limits<T>::lowest(), std::min<int64_t>(std::numeric_limits<T>::max(), int64_t{1} << 24))(rng));
    }
    expected[i] = static_cast<float>(raw[i]);
  }
  return {as_bytes(raw), expected};
}

template <typename T>
void check_round_trip(DataType type) {
  Device& dev = test::test_device();
  const int64_t voxels = 7 * 5 * 3, capacity = 5;
  DeviceRingBuffer ring(dev, voxels, capacity);
  const cl_mem ring_mem = ring.data().get();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const_cast<DeviceBuffer<float>&>(ring.data()).fill(dev.queue(), std::nanf(""));  // poison every slot
  std::map<int64_t, std::vector<float>> sent;
  // 13 volumes through a window of 5: wraps around twice; 7 arrives before 6.
  for (int64_t index : {0, 1, 2, 3, 4, 5, 7, 6, 8, 9, 10, 11, 12}) {
    auto [bytes, expected] = random_volume<T>(static_cast<size_t>(voxels), rng);
    ClEvent e = ring.push(index, bytes, type);
    cl_event raw = e.get();
    ASSERT_EQ(clWaitForEvents(1, &raw), CL_SUCCESS);
    sent[index] = expected;
    ASSERT_TRUE(ring.contains(index));
    EXPECT_EQ(ring.read_volume(index), expected) << "volume " << index;
  }
  EXPECT_EQ(ring.newest(), 12);
  for (int64_t index = 0; index <= 12; ++index) {
    EXPECT_EQ(ring.contains(index), index >= 8) << index;
    if (index >= 8) {
      EXPECT_EQ(ring.read_volume(index), sent[index]) << "after wrap-around, volume " << index;
    }
  }
  EXPECT_EQ(ring.data().get(), ring_mem) << "the ring's device buffer must never be reallocated";
}

TEST(DeviceRingBuffer, Int16RoundTripAcrossWrapAround) {
  check_round_trip<int16_t>(DataType::kInt16);
}
TEST(DeviceRingBuffer, Uint16RoundTripAcrossWrapAround) {
  check_round_trip<uint16_t>(DataType::kUint16);
}
TEST(DeviceRingBuffer, Uint8RoundTripAcrossWrapAround) {
  check_round_trip<uint8_t>(DataType::kUint8);
}
TEST(DeviceRingBuffer, Int32RoundTripAcrossWrapAround) {
  check_round_trip<int32_t>(DataType::kInt32);
}
TEST(DeviceRingBuffer, Float32RoundTripAcrossWrapAround) {
  check_round_trip<float>(DataType::kFloat32);
}

TEST(DeviceRingBuffer, BackToBackPushesWithoutWaiting) {
  // The shared raw upload buffer and the two staging areas must not be overwritten while in use.
  Device& dev = test::test_device();
  const int64_t voxels = 64 * 33 + 7, capacity = 4;
  DeviceRingBuffer ring(dev, voxels, capacity);
  std::mt19937_64 rng(11);
  std::map<int64_t, std::vector<float>> sent;
  for (int64_t index = 0; index < 10; ++index) {
    auto [bytes, expected] = random_volume<int16_t>(static_cast<size_t>(voxels), rng);
    ring.push(index, bytes, DataType::kInt16);  // no wait between pushes
    sent[index] = expected;
  }
  for (int64_t index = 6; index < 10; ++index) EXPECT_EQ(ring.read_volume(index), sent[index]) << index;
}

// push_device: volumes copied in from a device buffer (e.g. smoothed copies) land in their slots across
// wrap-around, and a range outside the source or an index outside the window is refused.
TEST(DeviceRingBuffer, PushFromDeviceAcrossWrapAround) {
  Device& dev = test::test_device();
  const int64_t voxels = 37, capacity = 3;
  DeviceRingBuffer ring(dev, voxels, capacity);
  std::vector<float> host(static_cast<size_t>(voxels * 2));
  DeviceBuffer<float> src(dev, host.size());
  for (int64_t index = 0; index < 7; ++index) {
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(index * 1000 + static_cast<int64_t>(i));
    src.write(dev.queue(), host);
    ring.push_device(index, src, static_cast<size_t>(voxels));  // the second volume of the source
    const std::vector<float> got = ring.read_volume(index);
    EXPECT_EQ(got, std::vector<float>(host.begin() + voxels, host.end())) << index;
  }
  EXPECT_FALSE(ring.contains(3));
  EXPECT_EQ(ring.newest(), 6);
  EXPECT_THROW(ring.push_device(3, src), std::invalid_argument);  // left the window
  EXPECT_THROW(ring.push_device(7, src, static_cast<size_t>(voxels + 1)), std::out_of_range);
}

TEST(DeviceRingBuffer, RefusesBadInput) {
  Device& dev = test::test_device();
  DeviceRingBuffer ring(dev, 10, 3);
  std::vector<std::byte> ok(20), short_payload(19);
  EXPECT_THROW(ring.push(0, short_payload, DataType::kInt16), std::invalid_argument);
  EXPECT_THROW(ring.push(0, ok, DataType::kFloat64), std::invalid_argument);
  EXPECT_THROW(ring.push(-1, ok, DataType::kInt16), std::invalid_argument);
  for (int64_t i = 0; i < 6; ++i) ring.push(i, ok, DataType::kInt16);
  EXPECT_THROW(ring.push(2, ok, DataType::kInt16), std::invalid_argument) << "2 left the window 3..5";
  EXPECT_NO_THROW(ring.push(3, ok, DataType::kInt16)) << "a resend inside the window is accepted";
  EXPECT_THROW(ring.read_volume(2), std::out_of_range);
  EXPECT_THROW(DeviceRingBuffer(dev, 0, 3), std::invalid_argument);
  EXPECT_THROW(DeviceRingBuffer(dev, 10, 0), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
