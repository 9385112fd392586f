// ctest-label: unit
// `rtfmri sim dicom`'s series writer (sim/dicom/dicom_series_sim.hpp) without its pacing (speed 0; no timing asserts):
// the vendors' file names, exactly the requested volumes (--start/--count) and nothing else in the folder, files that
// read back (scanner/assemble/dicom_volume.hpp) as the image's volumes, atomic mode leaving no temporary file, a stop
// request ending the run cleanly, refusals of unusable options; and the slice times (sim/dicom/slice_timing.hpp) from
// named orders, from a NIfTI header's slice_code / slice_duration and from a BIDS sidecar's SliceTiming.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/io/nifti_io.hpp"
#include "scanner/assemble/dicom_volume.hpp"
#include "scanner/dicom/dicom_header.hpp"
#include "sim/dicom/dicom_series_sim.hpp"
#include "sim/dicom/slice_timing.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf::sim {
namespace {

namespace fs = std::filesystem;

Image small_series(uint32_t seed) {
  ImageHeader h;
  h.dims = {9, 7, 5};
  h.num_volumes = 4;
  h.tr_s = 2.0;
  h.voxel_mm = {3, 3, 4};
  h.affine = Eigen::Matrix4d::Identity();
  h.affine(0, 0) = -3.0;  // LAS, as dcm2niix writes
  h.affine(1, 1) = 3.0;
  h.affine(2, 2) = 4.0;
  h.affine.block<3, 1>(0, 3) = Eigen::Vector3d(12, -10, -8);
  Image image(h);
  for (size_t i = 0; i < image.data().size(); ++i) image.data()[i] = static_cast<float>((i * 7919 + seed) % 4000);
  return image;
}

// Every entry under `folder`, relative, as strings.
std::set<std::string> listing(const fs::path& folder) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(folder)) {
    if (e.is_regular_file()) out.insert(fs::relative(e.path(), folder).string());
  }
  return out;
}

TEST(DicomSeriesSim, VendorFileNames) {
  EXPECT_EQ(dicom_file_names(DicomVendor::kSiemensMosaic, 13, 0, 30), std::vector<fs::path>{"001_000013_000001.dcm"});
  const std::vector<fs::path> ge = dicom_file_names(DicomVendor::kGe, 5, 1, 11);
  ASSERT_EQ(ge.size(), 11u);
  EXPECT_EQ(ge.front(), fs::path("s5/i0000012.MRDC.12"));
  EXPECT_EQ(ge.back(), fs::path("s5/i0000022.MRDC.22"));
  EXPECT_EQ(parse_dicom_vendor("ge"), DicomVendor::kGe);
  EXPECT_THROW(parse_dicom_vendor("philips"), std::invalid_argument);
}

TEST(DicomSeriesSim, MosaicsOfTheChosenVolumesOnly) {
  const Image image = small_series(test::test_seed());
  const test::TempDir work;
  DicomSimOptions o;
  o.out = work / "out";
  o.speed = 0;
  o.series_number = 13;
  o.start = 1;
  o.count = 2;
  o.slice_timing_s = slice_timing(SliceOrder::kInterleaved, image.nz(), image.header().tr_s);
  int64_t reported = 0;
  o.on_volume = [&](const DicomSimVolume& v) {
    EXPECT_EQ(v.index, reported++);
    EXPECT_EQ(v.total, 2);
    EXPECT_TRUE(fs::exists(v.files.front()));
  };
  const DicomSimReport r = simulate_dicom_series(image, o);
  EXPECT_EQ(r.volumes, 2);
  EXPECT_EQ(r.files, 2);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(reported, 2);
  EXPECT_EQ(listing(o.out), (std::set<std::string>{"001_000013_000001.dcm", "001_000013_000002.dcm"}));
  for (int64_t i = 0; i < 2; ++i) {
    const fs::path file = o.out / fmt::format("001_000013_{:06}.dcm", i + 1);
    const dicom::DicomVolume back = dicom::mosaic_volume(file);
    EXPECT_EQ(back.image.data(), image.extract_volume(1 + i).data()) << "volume " << i;
    ASSERT_EQ(back.slice_timing_s.size(), o.slice_timing_s.size());
    for (size_t k = 0; k < o.slice_timing_s.size(); ++k) EXPECT_NEAR(back.slice_timing_s[k], o.slice_timing_s[k], 1e-9);
    const dicom::DicomHeader h = dicom::read_dicom_header(file);
    EXPECT_EQ(h.instance_number, i + 1);
    EXPECT_EQ(h.series_number, 13);
    EXPECT_EQ(h.series_instance_uid, r.series_instance_uid);
  }
}

TEST(DicomSeriesSim, AtomicGeSlicesLeaveNoTemporaryFiles) {
  const Image image = small_series(test::test_seed());
  const test::TempDir work;
  DicomSimOptions o;
  o.out = work / "out";
  o.vendor = DicomVendor::kGe;
  o.speed = 0;
  o.series_number = 5;
  o.atomic = true;
  const DicomSimReport r = simulate_dicom_series(image, o);
  EXPECT_EQ(r.volumes, 4);
  EXPECT_EQ(r.files, 20);
  std::set<std::string> want;
  for (int64_t i = 0; i < 4; ++i) {
    for (const fs::path& f : dicom_file_names(DicomVendor::kGe, 5, i, 5)) want.insert(f.string());
  }
  EXPECT_EQ(listing(o.out), want);  // no hidden .tmp file left
  for (int64_t i = 0; i < 4; ++i) {
    std::vector<fs::path> files;
    for (const fs::path& f : dicom_file_names(DicomVendor::kGe, 5, i, 5)) files.push_back(o.out / f);
    EXPECT_EQ(dicom::slice_stack_volume(files).image.data(), image.extract_volume(i).data()) << "volume " << i;
  }
}

TEST(DicomSeriesSim, StopEndsTheRunBetweenVolumes) {
  const Image image = small_series(1);
  const test::TempDir work;
  DicomSimOptions o;
  o.out = work / "out";
  o.speed = 0;
  o.atomic = true;
  bool stop = false;
  o.stop = [&] { return stop; };
  o.on_volume = [&](const DicomSimVolume&) { stop = true; };
  const DicomSimReport r = simulate_dicom_series(image, o);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.volumes, 1);
  EXPECT_EQ(listing(o.out), std::set<std::string>{"001_000001_000001.dcm"});
}

TEST(DicomSeriesSim, RefusesUnusableOptions) {
  const test::TempDir work;
  Image image = small_series(1);
  DicomSimOptions o;
  o.out = work / "out";
  o.speed = 0;
  o.start = 4;  // the image has volumes 0 .. 3
  EXPECT_THROW(simulate_dicom_series(image, o), std::invalid_argument);
  o.start = 0;
  o.slice_timing_s = {0.0, 0.5};  // two times for five slices
  EXPECT_THROW(simulate_dicom_series(image, o), std::invalid_argument);
  o.slice_timing_s.clear();
  image.header().tr_s = 0;  // no TR and none given
  EXPECT_THROW(simulate_dicom_series(image, o), std::invalid_argument);
  image.header().tr_s = 2;
  image.data()[3] = 0.25f;  // not an integer: the writer refuses, nothing is left behind
  o.atomic = true;
  EXPECT_THROW(simulate_dicom_series(image, o), std::invalid_argument);
  EXPECT_TRUE(!fs::exists(o.out) || listing(o.out).empty());
}

TEST(SliceTiming, NamedOrders) {
  const std::vector<double> interleaved = slice_timing(SliceOrder::kInterleaved, 5, 1.0);
  const std::vector<double> want_interleaved{0.0, 0.6, 0.2, 0.8, 0.4};
  ASSERT_EQ(interleaved.size(), 5u);
  for (size_t k = 0; k < 5; ++k) EXPECT_NEAR(interleaved[k], want_interleaved[k], 1e-12);
  const std::vector<double> siemens_even = slice_timing(SliceOrder::kSiemensInterleaved, 4, 2.0);  // 1, 3, 0, 2
  const std::vector<double> want_even{1.0, 0.0, 1.5, 0.5};
  for (size_t k = 0; k < 4; ++k) EXPECT_NEAR(siemens_even[k], want_even[k], 1e-12);
  const std::vector<double> descending = slice_timing(SliceOrder::kDescending, 3, 3.0);
  EXPECT_EQ(descending, (std::vector<double>{2.0, 1.0, 0.0}));
  EXPECT_TRUE(slice_timing(SliceOrder::kNone, 3, 3.0).empty());
  EXPECT_THROW(parse_slice_order("random"), std::invalid_argument);
}

// A NIfTI-1 file's slice fields patched in place (dim_info 39, slice_start 74, slice_end 120, slice_code 122,
// xyzt_units 123, slice_duration 132).
void patch_slice_fields(const fs::path& file, int slice_code, float duration, unsigned char units) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  const unsigned char dim_info = 3 << 4;
  const int16_t zero = 0;
  const auto code = static_cast<unsigned char>(slice_code);
  f.seekp(39).write(reinterpret_cast<const char*>(&dim_info), 1);
  f.seekp(74).write(reinterpret_cast<const char*>(&zero), 2);
  f.seekp(120).write(reinterpret_cast<const char*>(&zero), 2);
  f.seekp(122).write(reinterpret_cast<const char*>(&code), 1);
  f.seekp(123).write(reinterpret_cast<const char*>(&units), 1);
  f.seekp(132).write(reinterpret_cast<const char*>(&duration), 4);
}

TEST(SliceTiming, FromTheNiftiHeader) {
  const test::TempDir work;
  const fs::path file = work / "series.nii";
  write_nifti(file, small_series(1), DataType::kInt16);
  EXPECT_FALSE(nifti_slice_timing(file, 5).has_value());  // no slice_code
  patch_slice_fields(file, 4, 0.4f, 2 | 8);               // ALT_DEC (4, 2, 0, 3, 1), seconds
  const auto alt_dec = nifti_slice_timing(file, 5);
  ASSERT_TRUE(alt_dec.has_value());
  const std::vector<double> want{0.8, 1.6, 0.4, 1.2, 0.0};
  for (size_t k = 0; k < 5; ++k) EXPECT_NEAR((*alt_dec)[k], want[k], 1e-6) << "slice " << k;
  patch_slice_fields(file, 5, 250.0f, 2 | 16);  // ALT_INC2 (1, 3, 0, 2, 4), ms
  const auto alt_inc2 = nifti_slice_timing(file, 5);
  ASSERT_TRUE(alt_inc2.has_value());
  const std::vector<double> want2{0.5, 0.0, 0.75, 0.25, 1.0};
  for (size_t k = 0; k < 5; ++k) EXPECT_NEAR((*alt_inc2)[k], want2[k], 1e-6) << "slice " << k;
  EXPECT_THROW(nifti_slice_timing(work / "missing.nii", 5), std::runtime_error);
}

TEST(SliceTiming, FromTheBidsSidecar) {
  const test::TempDir tmp;
  const fs::path nifti = tmp.path() / "sub-01_task-rest_bold.nii.gz";
  EXPECT_EQ(bids_sidecar(nifti), tmp.path() / "sub-01_task-rest_bold.json");
  EXPECT_EQ(bids_sidecar(tmp.path() / "x.nii"), tmp.path() / "x.json");
  EXPECT_FALSE(bids_slice_timing(nifti, 3, 2.0).has_value());  // no sidecar
  std::ofstream(bids_sidecar(nifti)) << R"({"RepetitionTime": 2.0, "SliceTiming": [0.0, 1.333, 0.667]})";
  const auto times = bids_slice_timing(nifti, 3, 2.0);
  ASSERT_TRUE(times.has_value());
  EXPECT_EQ(*times, (std::vector<double>{0.0, 1.333, 0.667}));
  EXPECT_THROW(bids_slice_timing(nifti, 4, 2.0), std::invalid_argument);  // 3 times for 4 slices
  EXPECT_THROW(bids_slice_timing(nifti, 3, 1.0), std::invalid_argument);  // a time beyond the TR
  std::ofstream(bids_sidecar(nifti)) << R"({"RepetitionTime": 2.0})";
  EXPECT_FALSE(bids_slice_timing(nifti, 3, 2.0).has_value());
  std::ofstream(bids_sidecar(nifti)) << "{not json";
  EXPECT_THROW(bids_slice_timing(nifti, 3, 2.0), std::invalid_argument);
}

}  // namespace
}  // namespace rtf::sim
