// ctest-label: gpu
// LiveMotionCorrection on its own (no sockets): volumes pushed into a device ring with known motion are registered
// from the previous estimate and resliced in place; a volume that cannot be registered (all NaN) is flagged with a
// reason and resliced with the previous estimate, and the next volume is registered again; volumes before the chosen
// reference are reported as such; an external reference on another grid is refused at construction.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/device/cl_error.hpp"
#include "core/motion/live_motion.hpp"
#include "tests/support/synthetic_volumes.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

// Uploads volume `index` and waits until the ring holds it (the stage reads the slot on the compute queue).
void push(DeviceRingBuffer& ring, int64_t index, const std::vector<float>& v) {
  const ClEvent done = ring.push(index, std::as_bytes(std::span<const float>(v)), DataType::kFloat32);
  const cl_event e = done.get();
  RTF_CL_CHECK(clWaitForEvents(1, &e));
}

void expect_close(const RigidParams& got, const RigidParams& truth, double tolerance, const std::string& what) {
  for (size_t a = 0; a < 3; ++a) {
    EXPECT_NEAR(got.translation_mm[a], truth.translation_mm[a], tolerance) << what << " axis " << a;
    EXPECT_NEAR(got.rotation_deg[a], truth.rotation_deg[a], tolerance) << what << " axis " << a;
  }
}

TEST(LiveMotionStage, FlagsAnUnregistrableVolumeAndRecovers) {
  const ImageHeader h = test::oblique_header({33, 29, 23});
  DeviceRingBuffer ring(test::test_device(), h.voxels_per_volume(), 4);
  LiveMotionCorrection stage(test::test_device(), h);
  const Eigen::Vector3d centre = (h.affine * Eigen::Vector4d(16, 14, 11, 1)).head<3>();
  const std::vector<RigidParams> truth{{},
                                       {{0.4, -0.3, 0.2}, {0.3, 0.2, -0.4}},
                                       {{0.9, -0.6, 0.5}, {0.6, 0.5, -0.8}},
                                       {{1.1, -0.7, 0.6}, {0.8, 0.6, -1.0}},
                                       {{1.4, -0.9, 0.8}, {1.0, 0.7, -1.2}}};
  const int64_t broken = 3;
  std::vector<std::vector<float>> corrected;  // each volume as the stage left it in the ring
  std::vector<uint8_t> mask;                  // the stage's DVARS mask: the brain mask of the reference (volume 0)
  for (int64_t t = 0; t < static_cast<int64_t>(truth.size()); ++t) {
    std::vector<float> v = test::blobs(h, 5, rigid_matrix(truth[static_cast<size_t>(t)], centre));
    if (t == broken) std::fill(v.begin(), v.end(), std::nanf(""));
    push(ring, t, v);
    if (t == 0) {
      ImageHeader g = h;
      g.num_volumes = 1;
      mask = compute_brain_mask(test::test_device(), Image(g, v)).inside;
    }
    const VolumeMotion m = stage.process(ring, t);
    corrected.emplace_back(static_cast<size_t>(h.voxels_per_volume()));
    ring.data().read(test::test_device().queue(), corrected.back(),
                     static_cast<size_t>(ring.slot_of(t) * h.voxels_per_volume()));
    if (t == broken) {
      EXPECT_FALSE(m.converged);
      EXPECT_NE(m.failure.find("NaN or infinite"), std::string::npos) << m.failure;
      expect_close(m.params, stage.history()[static_cast<size_t>(t - 1)].params, 1e-9, "flagged keeps the estimate");
      continue;
    }
    ASSERT_TRUE(m.converged) << "volume " << t << ": " << m.failure;
    // Parameters are about the central voxel (16, 14, 11), the centre used above; the bounds.
    expect_close(m.params, truth[static_cast<size_t>(t)], 0.05, "volume " + std::to_string(t));
  }
  ASSERT_EQ(stage.history().size(), truth.size());
  EXPECT_GT(stage.history()[1].fd_mm, 0.0);
  EXPECT_NEAR(stage.history()[broken].fd_mm, 0.0, 1e-12);  // flagged: the previous estimate is kept
  EXPECT_GT(stage.history()[2].dvars, 0.0);
  EXPECT_TRUE(std::isfinite(stage.history()[4].dvars));  // NaN voxels of the flagged volume 3 are left out
  // DVARS (computed on the device) equals the host definition over the corrected volumes.
  for (size_t t = 1; t < truth.size(); ++t) {
    const double want = dvars(corrected[t - 1], corrected[t], mask);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(stage.history()[t].dvars)) << t;
    } else {
      EXPECT_NEAR(stage.history()[t].dvars, want, 1e-5 * want + 1e-9) << "volume " << t;
    }
  }
}

TEST(LiveMotionStage, VolumesBeforeTheReferenceAreReportedAndLeftAlone) {
  const ImageHeader h = test::oblique_header({21, 19, 15});
  DeviceRingBuffer ring(test::test_device(), h.voxels_per_volume(), 4);
  LiveMotionOptions options;
  options.reference_index = 2;
  LiveMotionCorrection stage(test::test_device(), h, options);
  for (int64_t t = 0; t < 4; ++t) {
    const std::vector<float> v = test::blobs(h, 9);
    push(ring, t, v);
    const VolumeMotion m = stage.process(ring, t);
    if (t < 2) {
      EXPECT_FALSE(m.converged);
      EXPECT_NE(m.failure.find("before the reference"), std::string::npos) << m.failure;
      EXPECT_EQ(ring.read_volume(t), v);  // untouched
    } else {
      EXPECT_TRUE(m.converged) << m.failure;
    }
  }
  EXPECT_TRUE(stage.has_reference());
}

TEST(LiveMotionStage, ExternalReferenceOnAnotherGridIsRefused) {
  const ImageHeader h = test::oblique_header({21, 19, 15});
  LiveMotionOptions options;
  ImageHeader other = test::oblique_header({21, 19, 14});
  options.reference_image = Image(other, test::blobs(other, 3));
  EXPECT_THROW(LiveMotionCorrection(test::test_device(), h, options), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
