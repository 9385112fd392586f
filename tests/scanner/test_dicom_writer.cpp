// ctest-label: e2e
// The DICOM writers (scanner/dicom/dicom_writer.hpp) against our readers and against dcm2niix (Debian's, run by the
// test): a random integer 37 x 29 x 11 x 3 image on an oblique grid (both handednesses) and pyneal's real
// 64 x 64 x 30 x 3 NIfTI, written as Siemens mosaics and as GE single slices, read back by
// scanner/assemble/dicom_volume.hpp voxel for voxel with the NIfTI's affine (within 1e-4 mm) and slice times; dcm2niix
// makes the same 4D NIfTI from the written folder (the independent check of the CSA header and the geometry) and its
// BIDS SliceTiming matches for the mosaics (for GE slices gdcmdump reads back each TriggerTime). GE files of a grid
// whose slice axis points against r x c come back with the slices reversed (as dcm2niix and every reader sorting along
// the normal do). Bad input is refused with std::invalid_argument.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "core/io/nifti_io.hpp"
#include "scanner/assemble/dicom_volume.hpp"
#include "scanner/dicom/dicom_header.hpp"
#include "scanner/dicom/dicom_writer.hpp"
#include "tests/support/data_paths.hpp"
#include "tests/support/dcm2niix.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf::dicom {
namespace {

namespace fs = std::filesystem;

bool have_gdcmdump() {
  return std::system("command -v gdcmdump >/dev/null 2>&1") == 0;
}

// The value of one element as gdcmdump prints it ("(0018,1060) DS [12.5]" -> "12.5"); empty where absent.
std::string element_text(const fs::path& file, const std::string& tag) {
  const std::string command = "gdcmdump '" + file.string() + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return {};
  std::array<char, 4096> line{};
  while (fgets(line.data(), static_cast<int>(line.size()), pipe.get()) != nullptr) {
    const std::string text(line.data());
    if (text.rfind(tag, 0) != 0) continue;
    const size_t open = text.find('['), close = text.find(']');
    if (open != std::string::npos && close != std::string::npos) return text.substr(open + 1, close - open - 1);
  }
  return {};
}

struct Converted {
  Image image;
  std::vector<double> slice_timing_s;  // dcm2niix's BIDS SliceTiming, empty where it wrote none
};

// dcm2niix's 4D NIfTI (and JSON sidecar) of the DICOM files in `folder` (tests/support/dcm2niix.hpp).
Converted dcm2niix_of(const fs::path& folder, const fs::path& work) {
  Converted c;
  c.image = test::dcm2niix_of(folder, work, &c.slice_timing_s);
  return c;
}

// A 3D/4D integer image in [low, high] on an oblique grid: rotation times voxel sizes, its determinant's sign chosen.
Image oblique_image(std::array<int64_t, 3> dims, int64_t nt, bool negative_determinant, float low, float high,
                    uint32_t seed) {
  ImageHeader h;
  h.dims = dims;
  h.num_volumes = nt;
  h.tr_s = 1.5;
  h.voxel_mm = {2.5, 3.1, 3.7};
  const Eigen::Matrix3d rotation =
      (Eigen::AngleAxisd(0.31, Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(-0.22, Eigen::Vector3d::UnitY()) *
       Eigen::AngleAxisd(0.17, Eigen::Vector3d::UnitX()))
          .toRotationMatrix();
  const Eigen::Vector3d scale(negative_determinant ? -2.5 : 2.5, 3.1, 3.7);
  h.affine.setIdentity();
  h.affine.block<3, 3>(0, 0) = rotation * scale.asDiagonal();
  h.affine.block<3, 1>(0, 3) = Eigen::Vector3d(-41.25, -63.5, 12.75);
  Image image(h);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(static_cast<int>(low), static_cast<int>(high));
  for (float& v : image.data()) v = static_cast<float>(value(rng));
  return image;
}

// The volume t of `image` with its slices reversed and the affine describing the same voxels at the same places.
Image reversed_slices(const Image& image, int64_t t) {
  const Image v = image.extract_volume(t);
  ImageHeader h = v.header();
  h.affine.block<3, 1>(0, 3) += h.affine.block<3, 1>(0, 2) * static_cast<double>(v.nz() - 1);
  h.affine.block<3, 1>(0, 2) *= -1.0;
  Image out(h);
  for (int64_t z = 0; z < v.nz(); ++z)
    for (int64_t y = 0; y < v.ny(); ++y)
      for (int64_t x = 0; x < v.nx(); ++x) out.at(x, y, z) = v.at(x, y, v.nz() - 1 - z);
  return out;
}

void expect_same(const Image& got, const Image& want, const std::string& what) {
  ASSERT_EQ(got.header().dims, want.header().dims) << what;
  ASSERT_EQ(got.data().size(), want.data().size()) << what;
  int64_t differ = 0;
  for (size_t i = 0; i < want.data().size(); ++i) differ += got.data()[i] != want.data()[i] ? 1 : 0;
  EXPECT_EQ(differ, 0) << what << ": voxels that differ";
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(got.header().affine(r, c), want.header().affine(r, c), 1e-4) << what << ": affine " << r << ", " << c;
    }
  }
}

void expect_times(const std::vector<double>& got, const std::vector<double>& want, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], tolerance) << what << ": slice " << k;
}

DicomWriteSeries series_for(const Image& image, int series_number) {
  DicomWriteSeries s;
  s.series_instance_uid = "1.2.826.0.1.3680043.10.1234.7." + std::to_string(series_number);
  s.series_number = series_number;
  s.tr_s = image.header().tr_s > 0 ? image.header().tr_s : 1.0;
  // Interleaved (0, 2, 4, ..., then 1, 3, ...), tr / nz apart.
  const auto nz = static_cast<size_t>(image.nz());
  s.slice_timing_s.resize(nz);
  size_t slot = 0;
  for (size_t k = 0; k < nz; k += 2)
    s.slice_timing_s[k] = static_cast<double>(slot++) * s.tr_s / static_cast<double>(nz);
  for (size_t k = 1; k < nz; k += 2)
    s.slice_timing_s[k] = static_cast<double>(slot++) * s.tr_s / static_cast<double>(nz);
  return s;
}

// Mosaics of every volume into `folder`, read back with mosaic_volume, then the folder through dcm2niix.
void check_mosaics(const Image& image, const fs::path& work) {
  const DicomWriteSeries series = series_for(image, 7);
  const fs::path folder = work / "siemens";
  fs::create_directories(folder);
  for (int64_t t = 0; t < image.nt(); ++t) {
    const fs::path file = folder / fmt::format("001_{:06}_{:06}.dcm", series.series_number, t + 1);
    write_mosaic_volume(image.extract_volume(t), series, t, file);
    const DicomVolume back = mosaic_volume(file);
    expect_same(back.image, image.extract_volume(t), fmt::format("mosaic {}", t));
    expect_times(back.slice_timing_s, series.slice_timing_s, 1e-9, "mosaic slice times");
    EXPECT_NEAR(back.image.header().tr_s, series.tr_s, 1e-9);
    const DicomHeader h = read_dicom_header(file);
    EXPECT_EQ(h.instance_number, t + 1);
    EXPECT_EQ(h.acquisition_number, t + 1);
    EXPECT_EQ(h.series_number, 7);
    EXPECT_EQ(h.modality, "MR");
    EXPECT_EQ(h.series_instance_uid, series.series_instance_uid);
  }
  if (!test::have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const Converted theirs = dcm2niix_of(folder, work / "siemens_out");
  ASSERT_EQ(theirs.image.nt(), image.nt());
  for (int64_t t = 0; t < image.nt(); ++t) {
    expect_same(theirs.image.extract_volume(t), image.extract_volume(t), fmt::format("dcm2niix mosaic {}", t));
  }
  expect_times(theirs.slice_timing_s, series.slice_timing_s, 1e-3, "dcm2niix SliceTiming of the mosaics");
}

// GE slice files of every volume into `folder`, read back with slice_stack_volume, then the folder through dcm2niix.
// `reversed`: the grid's slice axis points against r x c, so readers give the slices in reverse.
void check_slices(const Image& image, const fs::path& work, bool reversed) {
  const DicomWriteSeries series = series_for(image, 5);
  const fs::path folder = work / "ge" / "s5";
  fs::create_directories(folder);
  const int64_t nz = image.nz();
  for (int64_t t = 0; t < image.nt(); ++t) {
    std::vector<fs::path> files;
    for (int64_t k = 0; k < nz; ++k) {
      const int64_t instance = t * nz + k + 1;
      files.push_back(folder / fmt::format("i{}.MRDC.{}", 1000 + instance, instance));
    }
    write_slice_files(image.extract_volume(t), series, t, files);
    const DicomVolume back = slice_stack_volume(files);
    expect_same(back.image, reversed ? reversed_slices(image, t) : image.extract_volume(t),
                fmt::format("GE volume {}", t));
    // Slice times through GE's RTIA timers (0021,105E), in the stack's order.
    std::vector<double> times = series.slice_timing_s;
    if (reversed) std::reverse(times.begin(), times.end());
    expect_times(back.slice_timing_s, times, 1e-6, "GE slice times (RTIA)");
    for (int64_t k = 0; k < nz; ++k) {
      const DicomHeader h = read_dicom_header(files[static_cast<size_t>(k)]);
      EXPECT_EQ(h.instance_number, t * nz + k + 1);
      EXPECT_EQ(h.images_in_acquisition, nz);
      EXPECT_EQ(h.pixel_representation, 1);  // GE: signed
    }
  }
  if (!test::have_dcm2niix()) GTEST_SKIP() << "dcm2niix is not installed (scripts/setup.sh installs it)";
  const Converted theirs = dcm2niix_of(folder, work / "ge_out");
  ASSERT_EQ(theirs.image.nt(), image.nt());
  for (int64_t t = 0; t < image.nt(); ++t) {
    expect_same(theirs.image.extract_volume(t), reversed ? reversed_slices(image, t) : image.extract_volume(t),
                fmt::format("dcm2niix GE volume {}", t));
  }
  // dcm2niix 1.0.20220720 takes GE slice times only from GE's private Protocol Data Block (0025,101B), which the
  // writer does not forge; the TriggerTime (0018,1060) per slice, GE's public field for it, is read back by gdcmdump.
  EXPECT_TRUE(theirs.slice_timing_s.empty());
  if (!have_gdcmdump()) GTEST_SKIP() << "gdcmdump is not installed (libgdcm-tools, scripts/setup.sh)";
  for (int64_t k = 0; k < nz; ++k) {
    const std::string text =
        element_text(folder / fmt::format("i{}.MRDC.{}", 1000 + nz + k + 1, nz + k + 1), "(0018,1060)");
    EXPECT_NEAR(std::stod(text) / 1000.0, series.slice_timing_s[static_cast<size_t>(k)], 1e-9)
        << "TriggerTime of slice " << k;
  }
}

TEST(DicomWriter, ObliqueMosaicsReadBackExactly) {
  const test::TempDir work;
  check_mosaics(oblique_image({37, 29, 11}, 3, true, 0, 65535, test::test_seed()), work.path());
}

TEST(DicomWriter, ObliqueMosaicsOfEitherHandednessReadBackExactly) {
  const test::TempDir work;
  check_mosaics(oblique_image({37, 29, 11}, 3, false, -32768, 32767, test::test_seed()), work.path());
}

TEST(DicomWriter, ObliqueGeSlicesReadBackExactly) {
  const test::TempDir work;
  check_slices(oblique_image({37, 29, 11}, 3, true, -32768, 32767, test::test_seed()), work.path(), false);
}

TEST(DicomWriter, GeSlicesAgainstTheNormalComeBackReversed) {
  const test::TempDir work;
  check_slices(oblique_image({37, 29, 11}, 3, false, -2000, 30000, test::test_seed()), work.path(), true);
}

TEST(DicomWriter, RealNiftiAsMosaicsAndGeSlices) {
  const std::string relative = "scanner/pyneal_testSeries.nii.gz";
  const auto file = test::extra_data(relative);
  if (!file) GTEST_SKIP() << test::missing_extra_data(relative);
  Image image = read_nifti(*file);
  ASSERT_EQ(image.nt(), 3);
  if (!(image.header().tr_s > 0)) image.header().tr_s = 1.0;
  const test::TempDir work;
  check_mosaics(image, work.path());
  // Its affine is diagonal with a positive determinant: GE slices come back reversed.
  check_slices(image, work.path(), image.header().affine.block<3, 3>(0, 0).determinant() > 0);
}

TEST(DicomWriter, RefusesWhatDicomCannotHoldExactly) {
  const test::TempDir work;
  const Image good = oblique_image({5, 4, 3}, 1, true, 0, 100, 1);
  DicomWriteSeries series = series_for(good, 1);
  const fs::path file = work / "x.dcm";
  std::vector<fs::path> files{work / "a", work / "b", work / "c"};

  Image fractional = good;
  fractional.data()[7] = 3.5f;
  EXPECT_THROW(write_mosaic_volume(fractional, series, 0, file), std::invalid_argument);
  EXPECT_THROW(write_slice_files(fractional, series, 0, files), std::invalid_argument);
  Image too_wide = good;
  too_wide.data()[0] = -1.0f;
  too_wide.data()[1] = 40000.0f;  // needs both a sign and more than 15 bits
  EXPECT_THROW(write_mosaic_volume(too_wide, series, 0, file), std::invalid_argument);
  Image sheared = good;
  sheared.header().affine(0, 2) += 0.5;
  EXPECT_THROW(write_mosaic_volume(sheared, series, 0, file), std::invalid_argument);
  EXPECT_THROW(write_slice_files(good, series, 0, {work / "a"}), std::invalid_argument);  // one name for 3 slices
  series.series_instance_uid = "1.2.abc";
  EXPECT_THROW(write_mosaic_volume(good, series, 0, file), std::invalid_argument);
  EXPECT_FALSE(fs::exists(file));
  try {
    write_mosaic_volume(fractional, series_for(good, 1), 4, file);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("volume 4: voxel (2, 1, 0) = 3.5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rtf::dicom
