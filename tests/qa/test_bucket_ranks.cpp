// ctest-label: gpu
// DeviceBucketRanks (the live quality index's rank sums by buckets cut at the reference's sorted values) against the
// double reference's integer sums (reference::rank_sums: sorting, average ranks), exactly: on odd masks of fresh random
// int16-like values (many ties), of both signs with both zeros, with buckets of 1 to 256 reference values (one bucket,
// many, empty ones between tied splitters), capacities of a power of two and not, counters adjacent and apart, the
// same reference ranked against several volumes in turn (the counts' two sets cleared in turn; the bucket counts add
// up to the mask); non-finite values counted, not ranked; a volume unlike the reference (scaled and shifted:
// most values in the last bucket) and a too small capacity flagged as overflow, and DeviceQualityIndex then ranks the
// slot again and gives the reference's quality index within 1e-12. The reference's keys and ranks are made on the
// host here, so the device's sort is not what is tested against.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/qa/bucket_ranks.hpp"
#include "core/qa/masked_sort.hpp"
#include "core/qa/quality_index.hpp"
#include "core/reference/qa_reference.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

template <typename T>
DeviceBuffer<T> upload(Device& device, const std::vector<T>& values) {
  DeviceBuffer<T> buffer(device, std::max<size_t>(values.size(), 1));
  if (!values.empty()) buffer.write(device.queue(), values);
  return buffer;
}

std::vector<float> masked_values(const std::vector<float>& volume, const std::vector<uint8_t>& mask) {
  std::vector<float> out;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] != 0) out.push_back(volume[v]);
  }
  return out;
}

// The reference as DeviceBucketRanks takes it: its masked keys sorted, its doubled centred ranks in mask order.
struct HostReference {
  DeviceBuffer<uint32_t> sorted;
  DeviceBuffer<int> ranks;
};

HostReference host_reference(Device& device, const std::vector<float>& reference, const std::vector<uint8_t>& mask) {
  const std::vector<float> values = masked_values(reference, mask);
  std::vector<uint32_t> keys(values.size());
  std::transform(values.begin(), values.end(), keys.begin(), float_sort_key);
  std::sort(keys.begin(), keys.end());
  const std::vector<int64_t> r = reference::doubled_centred_ranks(values);
  return {upload(device, keys), upload(device, std::vector<int>(r.begin(), r.end()))};
}

// Two volumes of `voxels` (slot 0 and 1 of the returned ring) and the reference, int16-like around a common mean.
struct Draw {
  std::vector<float> reference, ring;
};

Draw draw(std::mt19937_64& rng, size_t voxels, bool mixed_signs) {
  std::normal_distribution<float> base(mixed_signs ? 0.0f : 800.0f, 150.0f), noise(0.0f, 12.0f);
  std::uniform_int_distribution<int> kind(0, 4);
  std::vector<float> mean(voxels);
  for (float& m : mean) m = std::round(base(rng));
  Draw d;
  d.reference.resize(voxels);
  d.ring.resize(2 * voxels);
  for (size_t v = 0; v < voxels; ++v) {
    d.reference[v] = mean[v];
    for (size_t s = 0; s < 2; ++s) {
      float x = std::round(mean[v] + noise(rng));
      if (mixed_signs && kind(rng) == 0) x = kind(rng) < 2 ? 0.0f : -0.0f;
      d.ring[s * voxels + v] = x;
    }
  }
  return d;
}

TEST(BucketRanks, SumsEqualTheReferenceExactly) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const size_t voxels : {size_t{2}, size_t{97}, size_t{31 * 17 * 7}}) {
    for (const bool mixed : {false, true}) {
      const Draw d = draw(rng, voxels, mixed);
      std::vector<uint8_t> mask(voxels);
      std::bernoulli_distribution inside(0.8);
      for (auto& m : mask) m = inside(rng) ? 1 : 0;
      mask[0] = mask[voxels - 1] = 1;
      const HostReference ref = host_reference(device, d.reference, mask);
      const DeviceBuffer<float> ring = upload(device, d.ring);
      struct Setting {
        int bucket, capacity, stride;
      };
      // Buckets of 1 (many empty ones between tied splitters) to 256 values, capacities of a power of two and not
      // (the sort padded past the capacity), counters next to each other or apart.
      for (const Setting c : {Setting{1, DeviceBucketRanks::kMaxCapacity, 1}, Setting{5, 1200, 8}, Setting{64, 1000, 3},
                              Setting{256, 0, 8}}) {
        const int bucket = c.bucket;
        SCOPED_TRACE(fmt::format("{} voxels, mixed signs {}, buckets of {}, capacity {}, counters {} apart", voxels,
                                 mixed, bucket, c.capacity, c.stride));
        DeviceBucketRanks ranks(device, mask, nullptr, bucket, c.capacity, c.stride);
        ranks.enqueue_set_reference(ref.sorted, ref.ranks);
        EXPECT_EQ(ranks.buckets(), static_cast<int>((ranks.count() + bucket - 1) / bucket));
        for (int turn = 0; turn < 3; ++turn) {  // the counts' two sets each used and cleared
          const int slot = turn % 2;
          ranks.enqueue(ring, slot);
          RTF_CL_CHECK(clFinish(device.queue()));
          const DeviceBucketRanks::Sums got = ranks.result();
          const std::vector<float> volume(d.ring.begin() + static_cast<std::ptrdiff_t>(slot * voxels),
                                          d.ring.begin() + static_cast<std::ptrdiff_t>((slot + 1) * voxels));
          const reference::RankSums want = reference::rank_sums(volume, d.reference, mask);
          ASSERT_FALSE(got.overflow) << "turn " << turn;
          const std::vector<int> per_bucket = ranks.bucket_counts();
          EXPECT_EQ(std::accumulate(per_bucket.begin(), per_bucket.end(), 0), ranks.count()) << "turn " << turn;
          EXPECT_EQ(got.nonfinite, 0);
          EXPECT_EQ(got.ab, want.ab) << "turn " << turn;
          EXPECT_EQ(got.aa, want.aa) << "turn " << turn;
          EXPECT_EQ(got.bb, want.bb) << "turn " << turn;
        }
      }
    }
  }
}

TEST(BucketRanks, NonFiniteValuesAreCountedNotRanked) {
  Device& device = test::test_device();
  std::mt19937_64 rng(std::random_device{}());
  const size_t voxels = 1001;
  Draw d = draw(rng, voxels, false);
  d.ring[17] = std::nanf("");
  d.ring[400] = INFINITY;
  d.ring[401] = -INFINITY;
  const std::vector<uint8_t> mask(voxels, 1);
  const HostReference ref = host_reference(device, d.reference, mask);
  DeviceBucketRanks ranks(device, mask, nullptr, 32);
  ranks.enqueue_set_reference(ref.sorted, ref.ranks);
  ranks.enqueue(upload(device, d.ring), 0);
  RTF_CL_CHECK(clFinish(device.queue()));
  EXPECT_EQ(ranks.result().nonfinite, 3);
}

TEST(BucketRanks, AVolumeUnlikeTheReferenceOverflowsAndIsRankedAgain) {
  Device& device = test::test_device();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const size_t voxels = 23 * 19 * 5;
  Draw d = draw(rng, voxels, false);
  for (size_t v = 0; v < voxels; ++v) d.ring[voxels + v] = 3.0f * d.ring[voxels + v] + 5000.0f;  // slot 1
  const std::vector<uint8_t> mask(voxels, 1);
  const DeviceBuffer<float> ring = upload(device, d.ring);
  {
    const HostReference ref = host_reference(device, d.reference, mask);
    DeviceBucketRanks ranks(device, mask, nullptr, 16);  // capacity 128: slot 1's values all fall in the last bucket
    ranks.enqueue_set_reference(ref.sorted, ref.ranks);
    ranks.enqueue(ring, 1);
    RTF_CL_CHECK(clFinish(device.queue()));
    EXPECT_TRUE(ranks.result().overflow);
    ranks.enqueue(ring, 0);  // the next volume is ranked again (the overflow left no count behind)
    RTF_CL_CHECK(clFinish(device.queue()));
    const DeviceBucketRanks::Sums s = ranks.result();
    const reference::RankSums want =
        reference::rank_sums(std::vector<float>(d.ring.begin(), d.ring.begin() + voxels), d.reference, mask);
    ASSERT_FALSE(s.overflow);
    EXPECT_EQ(s.ab, want.ab);
    EXPECT_EQ(s.aa, want.aa);
  }
  // DeviceQualityIndex on the same slots: the overflowing one sorted and ranked again, both equal to the reference.
  DeviceQualityIndex q(device, mask);
  q.set_reference(upload(device, d.reference));
  for (const int slot : {0, 1, 0}) {
    const std::vector<float> volume(d.ring.begin() + static_cast<std::ptrdiff_t>(slot * voxels),
                                    d.ring.begin() + static_cast<std::ptrdiff_t>((slot + 1) * voxels));
    EXPECT_NEAR(q.quality_of_slot(ring, slot), reference::quality_index(volume, d.reference, mask), 1e-12)
        << "slot " << slot;
  }
  EXPECT_EQ(q.reranked(), 1) << "only the scaled volume";
}

TEST(BucketRanks, TooSmallACapacityIsFlagged) {
  Device& device = test::test_device();
  std::mt19937_64 rng(std::random_device{}());
  const size_t voxels = 500;
  const Draw d = draw(rng, voxels, false);
  const std::vector<uint8_t> mask(voxels, 1);
  const HostReference ref = host_reference(device, d.reference, mask);
  DeviceBucketRanks one_bucket(device, mask, nullptr, 1000, 256);  // one bucket of 500 values, room for 256
  EXPECT_EQ(one_bucket.buckets(), 1);
  one_bucket.enqueue_set_reference(ref.sorted, ref.ranks);
  one_bucket.enqueue(upload(device, d.ring), 0);
  RTF_CL_CHECK(clFinish(device.queue()));
  EXPECT_TRUE(one_bucket.result().overflow);
}

TEST(BucketRanks, BadUse) {
  Device& device = test::test_device();
  const std::vector<uint8_t> mask(10, 1);
  EXPECT_THROW(DeviceBucketRanks(device, std::vector<uint8_t>{}), std::invalid_argument);
  EXPECT_THROW(DeviceBucketRanks(device, mask, nullptr, 0), std::invalid_argument);
  EXPECT_THROW(DeviceBucketRanks(device, mask, nullptr, 4, DeviceBucketRanks::kMaxCapacity + 1), std::invalid_argument);
  EXPECT_THROW(DeviceBucketRanks(device, mask, nullptr, 4, 0, 0), std::invalid_argument);
  DeviceBucketRanks ranks(device, mask);
  const DeviceBuffer<float> ring = upload(device, std::vector<float>(10, 1.0f));
  EXPECT_THROW(ranks.enqueue(ring, 0), std::logic_error) << "no reference";
  EXPECT_THROW((void)ranks.result(), std::logic_error);
  const DeviceBuffer<uint32_t> few(device, 3);
  const DeviceBuffer<int> ten(device, 10);
  EXPECT_THROW(ranks.enqueue_set_reference(few, ten), std::invalid_argument);
  ranks.enqueue_set_reference(DeviceBuffer<uint32_t>(device, 10), ten);
  EXPECT_THROW(ranks.enqueue(ring, 1), std::invalid_argument) << "a slot past the buffer";
}

}  // namespace
}  // namespace rtf
