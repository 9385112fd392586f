// ctest-label: e2e
// Volumes from real scanner DICOM (scanner/assemble/dicom_volume.hpp) against dcm2niix (Debian's, installed by
// scripts/setup.sh), run by the test on a copy of pyneal's Siemens mosaic and GE one-file-per-slice series
// (scanner/ of the extra data, RTF_EXTRA_DATA_DIR): every volume's voxels equal dcm2niix's exactly and its affine
// within 1e-4 mm; the Siemens slice times are the CSA's MosaicRefAcqTimes, GE's (from the RTIA timers) dcm2niix's
// SliceTiming within 1 ms. Skipped where dcm2niix or the data are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/io/nifti_io.hpp"
#include "scanner/assemble/dicom_volume.hpp"
#include "scanner/dicom/dicom_header.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/dcm2niix.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf::dicom {
namespace {

namespace fs = std::filesystem;
using test::dcm2niix_of;
using test::expect_same_volume;
using test::have_dcm2niix;

// Files of `folder` sorted by InstanceNumber.
std::vector<fs::path> by_instance(const fs::path& folder) {
  std::vector<std::pair<int, fs::path>> files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    files.emplace_back(read_dicom_header(entry.path()).instance_number, entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<fs::path> out;
  for (const auto& f : files) out.push_back(f.second);
  return out;
}

TEST(DicomVolume, SiemensMosaicsEqualDcm2niix) {
  const std::string first = "scanner/pyneal_Siemens/funcData/001_000013_000001.dcm";
  const auto file = test::extra_data(first);
  if (!file) GTEST_SKIP() << test::missing_extra_data(first);
  if (!have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const test::TempDir work;
  std::vector<double> their_times;
  const Image theirs = dcm2niix_of(file->parent_path(), work.path(), &their_times);
  const std::vector<fs::path> files = by_instance(file->parent_path());
  ASSERT_EQ(theirs.nt(), static_cast<int64_t>(files.size()));
  ASSERT_EQ(their_times.size(), 18u);
  for (size_t t = 0; t < files.size(); ++t) {
    const DicomVolume v = mosaic_volume(files[t]);
    expect_same_volume(v.image, theirs, static_cast<int64_t>(t));
    ASSERT_EQ(v.slice_timing_s.size(), 18u);
    EXPECT_NEAR(v.slice_timing_s[0], 0.49, 1e-9);
    EXPECT_NEAR(v.slice_timing_s[1], 0.0, 1e-9);
    for (size_t k = 0; k < 18; ++k) EXPECT_NEAR(v.slice_timing_s[k], their_times[k], 1e-6) << "slice " << k;
    EXPECT_NEAR(v.image.header().tr_s, 1.0, 1e-9);
  }
}

TEST(DicomVolume, GeSliceFilesEqualDcm2niix) {
  const std::string first = "scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1";
  const auto file = test::extra_data(first);
  if (!file) GTEST_SKIP() << test::missing_extra_data(first);
  if (!have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const test::TempDir work;
  std::vector<double> their_times;
  const Image theirs = dcm2niix_of(file->parent_path(), work.path(), &their_times);
  const std::vector<fs::path> files = by_instance(file->parent_path());
  ASSERT_EQ(files.size(), 54u);
  ASSERT_EQ(their_times.size(), 18u);
  ASSERT_EQ(theirs.nt(), 3);
  for (int t = 0; t < 3; ++t) {
    // A volume's 18 files, shuffled: the stack is sorted along the slice normal, not by file order.
    std::vector<fs::path> volume(files.begin() + 18 * t, files.begin() + 18 * (t + 1));
    std::reverse(volume.begin(), volume.end());
    std::rotate(volume.begin(), volume.begin() + 7, volume.end());
    const DicomVolume v = slice_stack_volume(volume);
    expect_same_volume(v.image, theirs, t);
    // Slice times from the RTIA timers: none for the first volume (its timers are mostly 0), then dcm2niix's
    // SliceTiming within 1 ms (the timers have 0.1 ms steps; dcm2niix writes the ideal interleaved pattern).
    if (t == 0) {
      EXPECT_TRUE(v.slice_timing_s.empty());
      continue;
    }
    ASSERT_EQ(v.slice_timing_s.size(), 18u) << "volume " << t;
    for (size_t k = 0; k < 18; ++k) EXPECT_NEAR(v.slice_timing_s[k], their_times[k], 1e-3) << "slice " << k;
  }
}

TEST(DicomVolume, RefusesWhatIsNotAMosaicOrAStack) {
  const std::string first = "scanner/pyneal_GE/funcData/s1925/i2862280.MRDC.1";
  const auto file = test::extra_data(first);
  if (!file) GTEST_SKIP() << test::missing_extra_data(first);
  EXPECT_THROW(mosaic_volume(*file), DicomError);                // GE slice: no mosaic
  EXPECT_THROW(slice_stack_volume({*file, *file}), DicomError);  // two slices at one position
}

}  // namespace
}  // namespace rtf::dicom
