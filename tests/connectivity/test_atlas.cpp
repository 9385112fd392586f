// Atlases and label images: the names file, validation, nearest-neighbour resampling through the affines on a
// synthetic label image with a known answer, ROI sets (counts, missing regions, the same-grid rule), and the real AAL
// atlas resampled to a 64x64x33 3 mm grid.
// ctest-label: unit
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <cmath>
#include <fstream>
#include <map>

#include "core/connectivity/atlas.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(AtlasNames, ReadsLabelAndNameAndSkipsComments) {
  test::TempDir dir("rtf-atlas");
  write_text(dir / "names.txt", "# comment\n\n1 Precentral_L 2001\r\n2 Precentral_R 2002\n  17 Vermis_10\n");
  const auto regions = read_label_names(dir / "names.txt");
  ASSERT_EQ(regions.size(), 3u);
  EXPECT_EQ(regions[0].label, 1);
  EXPECT_EQ(regions[0].name, "Precentral_L");
  EXPECT_EQ(regions[1].name, "Precentral_R");
  EXPECT_EQ(regions[2].label, 17);
  EXPECT_EQ(regions[2].name, "Vermis_10");
}

TEST(AtlasNames, RejectsMalformedFiles) {
  test::TempDir dir("rtf-atlas");
  const std::map<std::string, std::string> bad{{"no_name", "1 A\n2\n"},          {"not_a_number", "x A\n"},
                                               {"zero_label", "0 Background\n"}, {"negative", "-3 A\n"},
                                               {"twice", "1 A\n1 B\n"},          {"empty", "# nothing\n"}};
  for (const auto& [name, text] : bad) {
    write_text(dir / name, text);
    EXPECT_THROW(read_label_names(dir / name), std::runtime_error) << name;
  }
  EXPECT_THROW(read_label_names(dir / "absent.txt"), std::runtime_error);
  try {
    read_label_names(dir / "twice");
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST(AtlasLabels, ValidatesTheLabelImage) {
  ImageHeader h;
  h.dims = {4, 3, 2};
  Image ok(h, 0.0f);
  ok.at(1, 1, 1) = 5.0f;
  ok.at(2, 0, 0) = 3.0f;
  const LabelAtlas a = make_atlas(ok);
  ASSERT_EQ(a.regions.size(), 2u);  // ascending distinct labels, named by value
  EXPECT_EQ(a.regions[0].label, 3);
  EXPECT_EQ(a.regions[1].name, "5");
  for (float bad : {2.5f, -1.0f, std::numeric_limits<float>::quiet_NaN(), 3e7f}) {
    Image img = ok;
    img.at(3, 2, 1) = bad;
    EXPECT_THROW(make_atlas(img), std::invalid_argument) << bad;
  }
  EXPECT_THROW(make_atlas(Image(h, 0.0f)), std::invalid_argument);  // no label at all
  ImageHeader h4 = h;
  h4.num_volumes = 2;
  EXPECT_THROW(make_atlas(Image(h4, 1.0f)), std::invalid_argument);
  EXPECT_THROW(make_atlas(ok, std::vector<AtlasRegion>{{3, "a"}, {3, "b"}}), std::invalid_argument);
}

// Atlas 20x16x12 at 1 mm with x flipped: world = (9 - i, j - 8, k - 6). EPI 9x9x4 at 2 mm from (-5.8, -7.1, -4.9).
// EPI voxel (i, j, k) -> world (2i - 5.8, 2j - 7.1, 2k - 4.9) -> atlas (14.8 - 2i, 2j + 0.9, 2k + 1.1), nearest
// (15 - 2i, 2j + 1, 2k + 1): inside for i <= 7 and j <= 7; i = 8 and j = 8 fall outside (label 0).
TEST(AtlasResample, NearestNeighbourThroughTheAffines) {
  ImageHeader ah;
  ah.dims = {20, 16, 12};
  ah.affine << -1, 0, 0, 9, 0, 1, 0, -8, 0, 0, 1, -6, 0, 0, 0, 1;
  Image labels(ah);
  const auto label_at = [](int64_t i, int64_t j, int64_t k) {
    return (i + j + k) % 7 == 0 ? 0.0f : static_cast<float>(1 + i + 20 * j + 320 * k);
  };
  for (int64_t k = 0; k < 12; ++k) {
    for (int64_t j = 0; j < 16; ++j) {
      for (int64_t i = 0; i < 20; ++i) labels.at(i, j, k) = label_at(i, j, k);
    }
  }
  ImageHeader eh;
  eh.dims = {9, 9, 4};
  eh.voxel_mm = {2, 2, 2};
  eh.affine << 2, 0, 0, -5.8, 0, 2, 0, -7.1, 0, 0, 2, -4.9, 0, 0, 0, 1;
  const Image out = resample_labels_nearest(labels, eh);
  ASSERT_EQ(out.header().dims, eh.dims);
  EXPECT_TRUE(out.header().same_grid(eh));
  int64_t outside = 0;
  for (int64_t k = 0; k < 4; ++k) {
    for (int64_t j = 0; j < 9; ++j) {
      for (int64_t i = 0; i < 9; ++i) {
        const bool inside = i <= 7 && j <= 7;
        const float expected = inside ? label_at(15 - 2 * i, 2 * j + 1, 2 * k + 1) : 0.0f;
        outside += inside ? 0 : 1;
        ASSERT_EQ(out.at(i, j, k), expected) << i << " " << j << " " << k;
      }
    }
  }
  EXPECT_EQ(outside, 17 * 4);
  // Exact halves round up: EPI x offset by half an atlas voxel maps EPI i to atlas i + 1.
  ImageHeader half = ah;
  half.affine(0, 3) = 8.5;  // world x = 8.5 - i  ->  atlas 9 - x = i + 0.5
  const Image shifted = resample_labels_nearest(labels, half);
  EXPECT_EQ(shifted.at(3, 4, 5), label_at(4, 4, 5));
  EXPECT_EQ(shifted.at(19, 4, 5), 0.0f);  // atlas i = 20: outside
  // A singular affine is refused.
  ImageHeader singular = eh;
  singular.affine(2, 2) = 0.0;
  EXPECT_THROW(resample_labels_nearest(labels, singular), std::invalid_argument);
  EXPECT_THROW(resample_labels_nearest(labels, eh, singular.affine), std::invalid_argument);
}

TEST(AtlasResample, ThroughATemplateToEpiTransform) {
  // An EPI grid whose world is the atlas's moved by T (a rotation and a shift): without the transform the labels land
  // elsewhere; through T^-1 every EPI voxel takes exactly the label of the atlas voxel it came from.
  ImageHeader ah;
  ah.dims = {14, 12, 10};
  ah.voxel_mm = {2, 2, 2};
  ah.affine << 2, 0, 0, -13, 0, 2, 0, -11, 0, 0, 2, -9, 0, 0, 0, 1;
  Image labels(ah);
  for (size_t v = 0; v < labels.data().size(); ++v) labels.data()[v] = static_cast<float>(1 + v % 97);
  Eigen::Matrix4d t = Eigen::Matrix4d::Identity();  // template -> EPI: 90 degrees about z, then (3, -4, 5) mm
  t.topLeftCorner<3, 3>() << 0, -1, 0, 1, 0, 0, 0, 0, 1;
  t.topRightCorner<3, 1>() << 3, -4, 5;
  ImageHeader eh = ah;
  eh.affine = t * ah.affine;  // EPI voxel v sits where T puts atlas voxel v
  const Image pulled = resample_labels_nearest(labels, eh, t.inverse());
  EXPECT_EQ(pulled.data(), labels.data());
  const Image naive = resample_labels_nearest(labels, eh);
  EXPECT_NE(naive.data(), labels.data());
  const RoiSet rois = rois_on_grid(make_atlas(labels), eh, AtlasPlacement::kResample, t.inverse());
  EXPECT_EQ(rois.present(), 97);
}

TEST(AtlasRois, CountsMissingRegionsAndTheSameGridRule) {
  ImageHeader h;
  h.dims = {6, 5, 4};
  Image labels(h, 0.0f);
  for (int64_t i = 0; i < 6; ++i) labels.at(i, 0, 0) = 1.0f;  // 6 voxels
  labels.at(2, 3, 3) = 2.0f;
  labels.at(5, 4, 3) = 4.0f;  // not in the names list: background
  const std::vector<AtlasRegion> names{{1, "first"}, {2, "second"}, {3, "not_in_image"}};
  const LabelAtlas atlas = make_atlas(labels, names);
  const RoiSet rois = rois_on_grid(atlas, h, AtlasPlacement::kSameGrid);
  ASSERT_EQ(rois.size(), 3);
  EXPECT_EQ(rois.voxel_counts, (std::vector<int64_t>{6, 1, 0}));
  EXPECT_EQ(rois.present(), 2);
  EXPECT_EQ(rois.missing(), std::vector<std::string>{"not_in_image"});
  EXPECT_EQ(rois.roi_of_voxel[0], 0);
  EXPECT_EQ(rois.roi_of_voxel[static_cast<size_t>((3 * 5 + 3) * 6 + 2)], 1);
  EXPECT_EQ(rois.roi_of_voxel[static_cast<size_t>((3 * 5 + 4) * 6 + 5)], -1);
  // The same-grid rule: another grid (dims or affine) is an error, not a silent resample.
  ImageHeader moved = h;
  moved.affine(1, 3) = 1.0;
  EXPECT_THROW(rois_on_grid(atlas, moved, AtlasPlacement::kSameGrid), std::invalid_argument);
  ImageHeader bigger = h;
  bigger.dims = {7, 5, 4};
  EXPECT_THROW(rois_on_grid(atlas, bigger, AtlasPlacement::kSameGrid), std::invalid_argument);
  // Resampling onto a grid shifted by 2 voxels in x keeps 3 of region 1's voxels (atlas x 3..5) and loses region 2
  // (atlas x 2 would be EPI x -1).
  ImageHeader shifted = h;
  shifted.affine(0, 3) = 3.0;
  const RoiSet moved_rois = rois_on_grid(atlas, shifted, AtlasPlacement::kResample);
  EXPECT_EQ(moved_rois.voxel_counts, (std::vector<int64_t>{3, 0, 0}));
  EXPECT_EQ(moved_rois.missing(), (std::vector<std::string>{"second", "not_in_image"}));
}

// World centroid (mm) of each region's voxels on a grid.
std::map<int32_t, Eigen::Vector3d> centroids(const std::vector<float>& labels, const ImageHeader& h,
                                             std::map<int32_t, int64_t>* counts) {
  std::map<int32_t, Eigen::Vector3d> sum;
  size_t v = 0;
  for (int64_t k = 0; k < h.dims[2]; ++k) {
    for (int64_t j = 0; j < h.dims[1]; ++j) {
      for (int64_t i = 0; i < h.dims[0]; ++i, ++v) {
        if (labels[v] <= 0.0f) continue;
        const auto l = static_cast<int32_t>(labels[v]);
        const Eigen::Vector4d w =
            h.affine * Eigen::Vector4d(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k), 1.0);
        auto [it, fresh] = sum.try_emplace(l, Eigen::Vector3d::Zero());
        it->second += w.head<3>();
        ++(*counts)[l];
      }
    }
  }
  for (auto& [l, s] : sum) s /= static_cast<double>((*counts)[l]);
  return sum;
}

TEST(AtlasAal, ResampledToA64x64x33Grid) {
  const auto image = test::installed_data(kAalImage);
  if (!image) GTEST_SKIP() << test::missing_installed_data(kAalImage);
  const LabelAtlas aal = read_aal(test::installed_data_dir());
  ASSERT_EQ(aal.regions.size(), 116u);
  EXPECT_EQ(aal.regions.front().label, 1);
  EXPECT_EQ(aal.regions.front().name, "Precentral_L");
  EXPECT_EQ(aal.regions[1].name, "Precentral_R");
  EXPECT_EQ(aal.regions.back().label, 116);
  EXPECT_EQ(aal.regions.back().name, "Vermis_10");

  // A typical 64x64x33 3 mm EPI box centred at MNI (0, -18, 18): x [-94.5, 94.5], y [-112.5, 76.5], z [-30, 66] at
  // voxel centres. It cuts off the top of the cortex and the bottom of the cerebellum.
  ImageHeader epi;
  epi.dims = {64, 64, 33};
  epi.voxel_mm = {3, 3, 3};
  epi.affine << 3, 0, 0, -94.5, 0, 3, 0, -112.5, 0, 0, 3, -30, 0, 0, 0, 1;
  const RoiSet rois = rois_on_grid(aal, epi);
  // The same box stored with x flipped (LAS voxel order, as many scanners write it).
  ImageHeader flipped = epi;
  flipped.affine(0, 0) = -3;
  flipped.affine(0, 3) = 94.5;
  const RoiSet rois_flipped = rois_on_grid(aal, flipped);
  EXPECT_EQ(rois_flipped.voxel_counts, rois.voxel_counts);

  // Independent expectations from the 1 mm atlas itself: per region, its voxels inside the EPI box (voxel centres
  // within the box grown by half an EPI voxel) and their centroid.
  std::map<int32_t, int64_t> atlas_counts, in_box;
  const auto atlas_centroids = centroids(aal.labels.data(), aal.labels.header(), &atlas_counts);
  const auto& ah = aal.labels.header();
  int64_t labelled_in_box = 0;
  size_t v = 0;
  for (int64_t k = 0; k < ah.dims[2]; ++k) {
    for (int64_t j = 0; j < ah.dims[1]; ++j) {
      for (int64_t i = 0; i < ah.dims[0]; ++i, ++v) {
        const float l = aal.labels.data()[v];
        if (l <= 0.0f) continue;
        const Eigen::Vector4d w =
            ah.affine * Eigen::Vector4d(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k), 1.0);
        if (w.x() >= -96 && w.x() < 96 && w.y() >= -114 && w.y() < 78 && w.z() >= -31.5 && w.z() < 67.5) {
          ++in_box[static_cast<int32_t>(l)];
          ++labelled_in_box;
        }
      }
    }
  }
  // Volume: every labelled EPI voxel stands for 27 mm^3 of atlas, within 2%.
  int64_t epi_labelled = 0;
  for (int64_t c : rois.voxel_counts) epi_labelled += c;
  EXPECT_NEAR(static_cast<double>(epi_labelled) * 27.0, static_cast<double>(labelled_in_box),
              0.02 * static_cast<double>(labelled_in_box));

  std::map<int32_t, int64_t> epi_counts;
  Image resampled = resample_labels_nearest(aal.labels, epi);
  const auto epi_centroids = centroids(resampled.data(), epi, &epi_counts);
  int64_t present = 0, big_regions = 0;
  Eigen::Vector3d mean_offset = Eigen::Vector3d::Zero();
  for (size_t r = 0; r < aal.regions.size(); ++r) {
    const int32_t label = aal.regions[r].label;
    const std::string& name = aal.regions[r].name;
    const int64_t inside = in_box.contains(label) ? in_box.at(label) : 0;
    if (inside == 0) {
      EXPECT_EQ(rois.voxel_counts[r], 0) << name << " lies outside the box";
    }
    if (inside >= 200) {
      EXPECT_GT(rois.voxel_counts[r], 0) << name << " has " << inside << " mm^3 in the box";
    }
    present += rois.voxel_counts[r] > 0 ? 1 : 0;
    if (rois.voxel_counts[r] == 0) continue;
    // Left regions on the left (x < 0 in MNI), right on the right.
    const Eigen::Vector3d c = epi_centroids.at(label);
    if (name.ends_with("_L")) {
      EXPECT_LT(c.x(), 0.0) << name;
    } else if (name.ends_with("_R")) {
      EXPECT_GT(c.x(), 0.0) << name;
    }
    // Regions wholly inside the box and of at least 5 cm^3 keep their centroid within 2 mm (a 3 mm lattice samples a
    // thin region's shape with ~1 mm error; a flipped axis or a voxel offset would move it by >= 3 mm).
    if (inside == atlas_counts.at(label) && inside >= 5000) {
      const Eigen::Vector3d offset = c - atlas_centroids.at(label);
      EXPECT_LT(offset.norm(), 2.0) << name;
      mean_offset += offset;
      ++big_regions;
    }
  }
  // This box's x and y voxel centres fall exactly halfway between AAL's 1 mm centres (x = 3i - 94.5 against integer
  // mm): ties round up to the next atlas voxel, so labels come from +0.5 mm and regions appear shifted by -0.5 mm in x
  // and y on average; z centres coincide with atlas centres (no shift).
  ASSERT_GT(big_regions, 40);
  mean_offset /= static_cast<double>(big_regions);
  EXPECT_NEAR(mean_offset.x(), -0.5, 0.25);
  EXPECT_NEAR(mean_offset.y(), -0.5, 0.25);
  EXPECT_NEAR(mean_offset.z(), 0.0, 0.25);
  EXPECT_EQ(present, rois.present());
  EXPECT_EQ(static_cast<size_t>(rois.present()) + rois.missing().size(), 116u);
  std::printf("AAL on 64x64x33 3 mm: %lld of 116 regions present; missing:", static_cast<long long>(present));
  for (const auto& name : rois.missing()) std::printf(" %s", name.c_str());
  std::printf("\n");
  EXPECT_GE(present, 100);  // the box holds most of the brain
  EXPECT_LT(present, 116);  // but not the lowest cerebellum
}

}  // namespace
}  // namespace rtf
