// ctest-label: e2e
// Enhanced (multi-frame) MR DICOM: scanner/dicom/enhanced_writer.hpp writes and scanner/assemble/enhanced_volume.hpp
// reads. Random integer volumes (odd sizes, an oblique affine, fresh seed; uint16 and int16) come back exactly: voxels
// equal, affine within 1e-4 mm, slice times within 2 us, TR, TemporalPositionIndex. dcm2niix (Debian's, run by the test
// on the written folder) makes the same NIfTI of each file, voxel for voxel, affine within 1e-4 mm, TR in its sidecar:
// the independent check (it gives no SliceTiming for these files). A file of two temporal positions gives two volumes.
// A frame without its position or orientation, or a file cut anywhere (every 7th byte, and inside the pixel data) is a
// DicomError naming the file, not a crash; the writer refuses what it cannot store exactly and leaves no file.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <tuple>

#include "core/io/nifti_io.hpp"
#include "scanner/assemble/enhanced_volume.hpp"
#include "scanner/dicom/dicom_header.hpp"
#include "scanner/dicom/enhanced_frames.hpp"
#include "scanner/dicom/enhanced_writer.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf::dicom {
namespace {

namespace fs = std::filesystem;

constexpr int kNx = 13, kNy = 11, kNz = 7;

// An oblique RAS affine as dcm2niix writes an ascending stack (rows bottom-up: a negative determinant), voxels 2.5 x
// 3.125 x 3.75 mm, rotated by random angles of up to 0.4 rad about each axis.
Eigen::Matrix4d oblique_affine(std::mt19937& rng) {
  std::uniform_real_distribution<double> angle(-0.4, 0.4), shift(-90.0, 90.0);
  const Eigen::Matrix3d rotation = (Eigen::AngleAxisd(angle(rng), Eigen::Vector3d::UnitX()) *
                                    Eigen::AngleAxisd(angle(rng), Eigen::Vector3d::UnitY()) *
                                    Eigen::AngleAxisd(angle(rng), Eigen::Vector3d::UnitZ()))
                                       .toRotationMatrix();
  Eigen::Matrix4d a = Eigen::Matrix4d::Identity();
  a.block<3, 3>(0, 0) = rotation * Eigen::Vector3d(2.5, -3.125, 3.75).asDiagonal();
  a.block<3, 1>(0, 3) = Eigen::Vector3d(shift(rng), shift(rng), shift(rng));
  return a;
}

// Random integers in [low, high], nt volumes on the affine's grid.
Image random_volumes(std::mt19937& rng, const Eigen::Matrix4d& affine, int nt, int low, int high, DataType type) {
  ImageHeader h;
  h.dims = {kNx, kNy, kNz};
  h.num_volumes = nt;
  h.affine = affine;
  for (int c = 0; c < 3; ++c) h.voxel_mm[static_cast<size_t>(c)] = affine.block<3, 1>(0, c).norm();
  h.tr_s = 1.4;
  h.source_type = type;
  Image image(h);
  std::uniform_int_distribution<int> value(low, high);
  for (float& v : image.data()) v = static_cast<float>(value(rng));
  return image;
}

DicomWriteSeries series_for(uint32_t seed) {
  DicomWriteSeries s;
  s.series_instance_uid = "1.2.826.0.1.3680043.9.7433.18." + std::to_string(seed);
  s.tr_s = 1.4;
  // Interleaved acquisition: even slices first.
  for (int k = 0; k < kNz; ++k)
    s.slice_timing_s.push_back(k % 2 == 0 ? k / 2 * 0.2 : (kNz + 1) / 2 * 0.2 + k / 2 * 0.2);
  return s;
}

int64_t voxels_that_differ(const Image& mine, const Image& want) {
  int64_t differ = 0;
  for (size_t i = 0; i < want.data().size(); ++i) differ += mine.data()[i] != want.data()[i] ? 1 : 0;
  return differ;
}

void expect_same_volume(const Image& mine, const Image& want, const std::string& what) {
  ASSERT_EQ(mine.header().dims, want.header().dims) << what;
  EXPECT_EQ(voxels_that_differ(mine, want), 0) << what << ": voxels that differ";
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(mine.header().affine(r, c), want.header().affine(r, c), 1e-4)
          << what << ": affine " << r << ", " << c;
    }
  }
}

void expect_slice_times(const std::vector<double>& mine, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(mine.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(mine[k], want[k], 2e-6) << what << ": slice " << k;
}

bool have_dcm2niix() {
  return std::system("command -v dcm2niix >/dev/null 2>&1") == 0;
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The file with the n-th (0-based) explicit-VR DS element `tag` renamed to the private-looking (0020,0039), so that a
// frame loses that attribute while the file stays well formed.
std::string without_nth(std::string bytes, const std::string& tag_bytes, int n) {
  size_t at = 0;
  for (int i = 0; i <= n; ++i) {
    at = bytes.find(tag_bytes + "DS", i == 0 ? 0 : at + 1);
    if (at == std::string::npos) return {};
  }
  bytes[at + 2] = '\x39';
  return bytes;
}

TEST(EnhancedVolume, WrittenVolumeReadsBackExactly) {
  const uint32_t seed = test::test_seed();
  std::mt19937 rng(seed);
  const test::TempDir dir;
  const DicomWriteSeries series = series_for(seed);
  struct Case {
    int low, high;
    DataType type;
    int expect_signed;
  };
  for (const Case& c : {Case{0, 65535, DataType::kUint16, 0}, Case{-32768, 32767, DataType::kInt16, 1},
                        Case{0, 900, DataType::kInt16, 1}}) {
    const Image written = random_volumes(rng, oblique_affine(rng), 1, c.low, c.high, c.type);
    const fs::path file = dir / "volume.dcm";
    write_enhanced_volume(written, series, 4, file);
    const std::string what = "values " + std::to_string(c.low) + " .. " + std::to_string(c.high);
    const EnhancedFrames frames = read_enhanced_frames(file);
    EXPECT_EQ(frames.header.pixel_representation, c.expect_signed) << what;
    EXPECT_EQ(frames.header.series_instance_uid, series.series_instance_uid);
    ASSERT_EQ(frames.frames.size(), static_cast<size_t>(kNz));
    for (const EnhancedFrame& f : frames.frames) EXPECT_EQ(f.temporal_position, 5);
    EXPECT_EQ(frames.frames[2].in_stack_position, 3);
    EXPECT_EQ(frames.frames[2].dimension_index_values, (std::vector<int>{1, 3, 5}));
    const std::vector<DicomVolume> read = enhanced_volumes(file);
    ASSERT_EQ(read.size(), 1u) << what;
    expect_same_volume(read[0].image, written, what);
    EXPECT_NEAR(read[0].image.header().tr_s, 1.4, 1e-9);
    EXPECT_EQ(read[0].image.header().source_type, c.type);
    expect_slice_times(read[0].slice_timing_s, series.slice_timing_s, what);
  }
}

// Debian's dcm2niix (v1.0.20220720) converts each enhanced file on its own (it does not stack one-volume files into
// 4D), so each file is compared with its own NIfTI, named by InstanceNumber (index + 1).
TEST(EnhancedVolume, Dcm2niixMakesTheSameNifti) {
  if (!have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const uint32_t seed = test::test_seed();
  std::mt19937 rng(seed);
  const test::TempDir dir;
  const DicomWriteSeries series = series_for(seed);
  const Image written = random_volumes(rng, oblique_affine(rng), 3, -2000, 2000, DataType::kInt16);
  fs::create_directories(dir / "series");
  for (int64_t t = 0; t < 3; ++t) {
    write_enhanced_volume(written.extract_volume(t), series, t, dir / "series" / ("vol" + std::to_string(t) + ".dcm"));
  }
  const fs::path out = dir / "nifti";
  fs::create_directories(out);
  const std::string command = "dcm2niix -z n -b y -f v%r -o '" + out.string() + "' '" + (dir / "series").string() +
                              "' >'" + (out / "log.txt").string() + "' 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command << "\n" << file_bytes(out / "log.txt");
  for (int64_t t = 0; t < 3; ++t) {
    const std::string name = "v" + std::to_string(t + 1);
    ASSERT_TRUE(fs::exists(out / (name + ".nii"))) << file_bytes(out / "log.txt");
    const Image theirs = read_nifti(out / (name + ".nii"));
    ASSERT_EQ(theirs.nt(), 1);
    expect_same_volume(theirs, written.extract_volume(t), "dcm2niix " + name);
    EXPECT_EQ(theirs.header().source_type, DataType::kInt16);
    std::ifstream json(out / (name + ".json"));
    const nlohmann::json sidecar = nlohmann::json::parse(json);
    EXPECT_NEAR(sidecar.at("RepetitionTime").get<double>(), 1.4, 1e-9);
    // Ours, read back from the same file, equals the same NIfTI.
    const std::vector<DicomVolume> mine = enhanced_volumes(dir / "series" / ("vol" + std::to_string(t) + ".dcm"));
    ASSERT_EQ(mine.size(), 1u);
    expect_same_volume(mine[0].image, theirs, "ours vs dcm2niix " + name);
  }
}

// One file of two temporal positions (write_enhanced_volumes) gives two volumes, in temporal order, each with its slice
// times. (Debian's dcm2niix 1.0.20220720 stacks such a file as 14 slices of one volume, so it is no check here.)
TEST(EnhancedVolume, TwoTemporalPositionsGiveTwoVolumes) {
  const uint32_t seed = test::test_seed();
  std::mt19937 rng(seed);
  const test::TempDir dir;
  const DicomWriteSeries series = series_for(seed);
  const Image written = random_volumes(rng, oblique_affine(rng), 2, 0, 30000, DataType::kUint16);
  fs::create_directories(dir / "run");
  const fs::path file = dir / "run" / "run.dcm";
  write_enhanced_volumes(written, series, 10, file);
  const EnhancedFrames frames = read_enhanced_frames(file);
  ASSERT_EQ(frames.frames.size(), static_cast<size_t>(2 * kNz));
  EXPECT_EQ(frames.frames.front().temporal_position, 11);
  EXPECT_EQ(frames.frames.back().temporal_position, 12);
  ASSERT_TRUE(frames.frames[0].acquisition_time_s && frames.frames[kNz].acquisition_time_s);
  EXPECT_NEAR(*frames.frames[kNz].acquisition_time_s - *frames.frames[0].acquisition_time_s, 1.4, 2e-6);  // one TR
  const std::vector<DicomVolume> read = enhanced_volumes(file);
  ASSERT_EQ(read.size(), 2u);
  for (int64_t t = 0; t < 2; ++t) {
    expect_same_volume(read[static_cast<size_t>(t)].image, written.extract_volume(t), "volume " + std::to_string(t));
    expect_slice_times(read[static_cast<size_t>(t)].slice_timing_s, series.slice_timing_s,
                       "volume " + std::to_string(t));
  }
}

TEST(EnhancedVolume, MissingFrameGeometryIsADicomError) {
  const uint32_t seed = test::test_seed();
  std::mt19937 rng(seed);
  const test::TempDir dir;
  const fs::path file = dir / "volume.dcm";
  write_enhanced_volume(random_volumes(rng, oblique_affine(rng), 1, 0, 100, DataType::kUint16), series_for(seed), 0,
                        file);
  const std::string bytes = file_bytes(file);
  // The third frame's ImagePositionPatient (0020,0032), then the shared ImageOrientationPatient (0020,0037), renamed.
  const std::string no_position = without_nth(bytes, std::string("\x20\x00\x32\x00", 4), 2);
  const std::string no_orientation = without_nth(bytes, std::string("\x20\x00\x37\x00", 4), 0);
  ASSERT_FALSE(no_position.empty());
  ASSERT_FALSE(no_orientation.empty());
  for (const auto& [name, broken, expect] :
       {std::tuple{"no_position.dcm", no_position, "frame 3 of 7: ImagePositionPatient"},
        std::tuple{"no_orientation.dcm", no_orientation, "frame 1 of 7: ImageOrientationPatient"}}) {
    write_bytes(dir / name, broken);
    try {
      enhanced_volumes(dir / name);
      ADD_FAILURE() << name << " was read";
    } catch (const DicomError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(EnhancedVolume, TruncatedFileIsADicomError) {
  const uint32_t seed = test::test_seed();
  std::mt19937 rng(seed);
  const test::TempDir dir;
  const fs::path file = dir / "volume.dcm";
  write_enhanced_volume(random_volumes(rng, oblique_affine(rng), 1, 0, 100, DataType::kUint16), series_for(seed), 0,
                        file);
  const std::string bytes = file_bytes(file);
  const size_t pixel_bytes = static_cast<size_t>(kNx * kNy * kNz * 2);
  std::vector<size_t> cuts = {bytes.size() - 1, bytes.size() - 2, bytes.size() - pixel_bytes / 2,
                              bytes.size() - pixel_bytes + 4};
  for (size_t keep = 0; keep < bytes.size(); keep += 7) cuts.push_back(keep);  // and through the whole header
  for (const size_t keep : cuts) {
    write_bytes(dir / "cut.dcm", bytes.substr(0, keep));
    EXPECT_THROW(enhanced_volumes(dir / "cut.dcm"), DicomError) << "cut to " << keep << " of " << bytes.size();
  }
  write_bytes(dir / "cut.dcm", bytes);  // the same bytes, whole: read
  EXPECT_EQ(enhanced_volumes(dir / "cut.dcm").size(), 1u);
}

TEST(EnhancedVolume, WriterRefusesWhatItCannotStoreExactly) {
  const uint32_t seed = test::test_seed();
  std::mt19937 rng(seed);
  const test::TempDir dir;
  const fs::path file = dir / "volume.dcm";
  const DicomWriteSeries series = series_for(seed);
  const Image good = random_volumes(rng, oblique_affine(rng), 1, 0, 100, DataType::kUint16);
  const auto refused = [&](const Image& v, const DicomWriteSeries& s, const std::string& why) {
    try {
      write_enhanced_volume(v, s, 0, file);
      ADD_FAILURE() << why << ": written";
    } catch (const DicomError& e) {
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(file)) << why;
  };
  Image fraction = good;
  fraction.data()[17] = 3.5f;
  refused(fraction, series, "a fraction");
  Image large = good;
  large.data()[5] = 70000.0f;
  refused(large, series, "beyond uint16");
  Image spread = good;
  spread.data()[5] = -1.0f;
  spread.data()[6] = 40000.0f;
  refused(spread, series, "beyond int16 and uint16 together");
  Image sheared = good;
  sheared.header().affine(0, 2) += 1.0;
  refused(sheared, series, "a sheared affine");
  refused(random_volumes(rng, oblique_affine(rng), 2, 0, 100, DataType::kUint16), series, "two volumes");
  DicomWriteSeries bad_uid = series;
  bad_uid.series_instance_uid = "1.2.abc";
  refused(good, bad_uid, "a bad UID");
  DicomWriteSeries few_times = series;
  few_times.slice_timing_s.pop_back();
  refused(good, few_times, "slice times not one per slice");
  write_enhanced_volume(good, series, 0, file);  // and the good one is written
  EXPECT_TRUE(fs::exists(file));
}

TEST(EnhancedVolume, RefusesAClassicFile) {
  const std::string first = "scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1";
  const auto file = test::extra_data(first);
  if (!file) GTEST_SKIP() << test::missing_extra_data(first);
  EXPECT_THROW(enhanced_volumes(*file), DicomError);
}

}  // namespace
}  // namespace rtf::dicom
