// ctest-label: unit
// NIfTI reading and writing: round trips (3D/4D, NIfTI-1/2, .nii/.nii.gz, every datatype), integer
// rounding and clamping, scaling, byte order, affine choice (sform, qform, pixdim), TR units, 5D handling.
// Hand-made files come from tests/support/nifti_bytes (written without nifticlib).
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "core/io/nifti_io.hpp"
#include "tests/support/nifti_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

using test::Nifti1Spec;
using test::Nifti2Spec;
using test::TempDir;

// A rotation about a tilted axis times voxel sizes, plus a translation: a qform-representable affine.
Eigen::Matrix4d oblique_affine(const std::array<double, 3>& voxel) {
  const Eigen::Matrix3d r = Eigen::AngleAxisd(0.3, Eigen::Vector3d(0.2, -0.5, 1.0).normalized()).toRotationMatrix();
  Eigen::Matrix4d a = Eigen::Matrix4d::Identity();
  a.topLeftCorner<3, 3>() = r * Eigen::Vector3d(voxel[0], voxel[1], voxel[2]).asDiagonal();
  a.topRightCorner<3, 1>() = Eigen::Vector3d(-91.5, 12.25, 40.0);
  return a;
}

Image random_image(std::array<int64_t, 3> dims, int64_t nt, uint32_t seed) {
  ImageHeader h;
  h.dims = dims;
  h.num_volumes = nt;
  h.voxel_mm = {2.5, 3.0, 3.5};
  h.affine = oblique_affine(h.voxel_mm);
  h.tr_s = nt > 1 ? 1.35 : 0.0;
  h.description = "rtfmri test image";
  Image image(h);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(100.0f, 40.0f);
  for (float& v : image.data()) v = noise(rng);
  return image;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

struct RoundTripCase {
  int version;
  const char* extension;
  int64_t nt;
};

class NiftiRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(NiftiRoundTrip, Float32IsExactAndGeometryIsKept) {
  const RoundTripCase c = GetParam();
  TempDir dir;
  const auto path = dir / (std::string("image") + c.extension);
  const Image original = random_image({7, 5, 3}, c.nt, 42);
  write_nifti(path, original, DataType::kFloat32, c.version);

  const Image back = read_nifti(path);
  EXPECT_EQ(back.header().dims, original.header().dims);
  EXPECT_EQ(back.nt(), c.nt);
  expect_same_bits(back.data(), original.data());
  EXPECT_EQ(back.header().voxel_mm, original.header().voxel_mm);  // 2.5, 3, 3.5 are exact in float
  EXPECT_EQ(back.header().source_type, DataType::kFloat32);
  EXPECT_EQ(back.header().description, "rtfmri test image");
  // NIfTI-1 stores the affine and TR as float32, NIfTI-2 as float64.
  const double tol = c.version == 1 ? 1e-4 : 1e-12;
  EXPECT_LE((back.header().affine - original.header().affine).cwiseAbs().maxCoeff(), tol);
  EXPECT_NEAR(back.header().tr_s, original.header().tr_s, c.version == 1 ? 1e-6 : 1e-15);

  const ImageHeader header_only = read_nifti_header(path);
  EXPECT_EQ(header_only.dims, back.header().dims);
  EXPECT_EQ(header_only.num_volumes, back.header().num_volumes);
  EXPECT_EQ(header_only.affine, back.header().affine);
}

INSTANTIATE_TEST_SUITE_P(Formats, NiftiRoundTrip,
                         ::testing::Values(RoundTripCase{1, ".nii", 1}, RoundTripCase{1, ".nii", 4},
                                           RoundTripCase{1, ".nii.gz", 4}, RoundTripCase{2, ".nii", 4},
                                           RoundTripCase{2, ".nii.gz", 1}, RoundTripCase{2, ".nii.gz", 3}),
                         [](const auto& param_info) {
                           return "Nifti" + std::to_string(param_info.param.version) +
                                  (std::string(param_info.param.extension) == ".nii" ? "_nii" : "_niigz") + "_nt" +
                                  std::to_string(param_info.param.nt);
                         });

TEST(NiftiWrite, FileLayoutIsStandard) {
  TempDir dir;
  const Image image = random_image({3, 2, 2}, 2, 1);
  write_nifti(dir / "a.nii", image, DataType::kInt16, 1);
  const std::vector<uint8_t> bytes = test::read_bytes(dir / "a.nii");
  ASSERT_EQ(bytes.size(), 352u + 3 * 2 * 2 * 2 * 2);
  int32_t sizeof_hdr = 0;
  std::memcpy(&sizeof_hdr, bytes.data(), 4);
  EXPECT_EQ(sizeof_hdr, 348);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()) + 344, 4), std::string("n+1\0", 4));
  float vox_offset = 0;
  std::memcpy(&vox_offset, bytes.data() + 108, 4);
  EXPECT_EQ(vox_offset, 352.0f);
  int16_t dim[8];
  std::memcpy(dim, bytes.data() + 40, sizeof(dim));
  EXPECT_EQ(dim[0], 4);
  EXPECT_EQ(dim[4], 2);
  EXPECT_EQ(bytes[123], 2 | 8);  // mm and seconds

  write_nifti(dir / "b.nii", image, DataType::kFloat64, 2);
  const std::vector<uint8_t> b2 = test::read_bytes(dir / "b.nii");
  ASSERT_EQ(b2.size(), 544u + 3 * 2 * 2 * 2 * 8);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b2.data()) + 4, 8), std::string("n+2\0\r\n\x1a\n", 8));
}

TEST(NiftiWrite, QformWrittenForRigidAffineOnly) {
  TempDir dir;
  Image image = random_image({4, 4, 4}, 1, 2);
  write_nifti(dir / "rigid.nii", image);
  Eigen::Matrix4d sheared = image.header().affine;
  sheared(0, 1) += 0.7;
  image.header().affine = sheared;
  write_nifti(dir / "sheared.nii", image);

  auto codes = [](const std::vector<uint8_t>& b) {
    int16_t q = 0;
    int16_t s = 0;
    std::memcpy(&q, b.data() + 252, 2);
    std::memcpy(&s, b.data() + 254, 2);
    return std::pair<int, int>(q, s);
  };
  EXPECT_EQ(codes(test::read_bytes(dir / "rigid.nii")), std::make_pair(1, 1));
  EXPECT_EQ(codes(test::read_bytes(dir / "sheared.nii")), std::make_pair(0, 1));
  EXPECT_LE((read_nifti(dir / "sheared.nii").header().affine - sheared).cwiseAbs().maxCoeff(), 1e-4);

  // The qform alone reproduces the affine: blank the sform code and read again.
  std::vector<uint8_t> bytes = test::read_bytes(dir / "rigid.nii");
  bytes[254] = 0;
  bytes[255] = 0;
  test::write_bytes(dir / "qform_only.nii", bytes);
  const Eigen::Matrix4d expected = oblique_affine({2.5, 3.0, 3.5});
  EXPECT_LE((read_nifti(dir / "qform_only.nii").header().affine - expected).cwiseAbs().maxCoeff(), 1e-4);
}

TEST(NiftiWrite, IntegerOutputRoundsAndClamps) {
  TempDir dir;
  ImageHeader h;
  h.dims = {9, 1, 1};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Image image(h, {-40000.0f, -1.5f, -0.5f, 0.5f, 1.5f, 2.4f, 2.6f, 40000.0f, nan});

  write_nifti(dir / "i16.nii", image, DataType::kInt16);
  const Image i16 = read_nifti(dir / "i16.nii");
  EXPECT_EQ(i16.header().source_type, DataType::kInt16);
  // Round half to even, clamp to [-32768, 32767], NaN -> 0.
  EXPECT_EQ(i16.data(), (std::vector<float>{-32768, -2, 0, 0, 2, 2, 3, 32767, 0}));

  write_nifti(dir / "u8.nii.gz", image, DataType::kUint8);
  EXPECT_EQ(read_nifti(dir / "u8.nii.gz").data(), (std::vector<float>{0, 0, 0, 0, 2, 2, 3, 255, 0}));
}

TEST(NiftiWrite, MaskAsUint8HasOneBytePerVoxel) {
  TempDir dir;
  ImageHeader h;
  h.dims = {5, 4, 3};
  Image mask(h);
  for (size_t i = 0; i < mask.data().size(); ++i) mask.data()[i] = (i % 3 == 0) ? 1.0f : 0.0f;
  write_nifti(dir / "mask.nii", mask, DataType::kUint8);
  EXPECT_EQ(std::filesystem::file_size(dir / "mask.nii"), 352u + 60u);
  const Image back = read_nifti(dir / "mask.nii");
  EXPECT_EQ(back.data(), mask.data());
  EXPECT_EQ(back.header().source_type, DataType::kUint8);
}

class NiftiDatatypes : public ::testing::TestWithParam<DataType> {};

TEST_P(NiftiDatatypes, IntegerValuedDataRoundTripsExactly) {
  TempDir dir;
  ImageHeader h;
  h.dims = {4, 3, 2};
  Image image(h);
  const bool is_signed = GetParam() != DataType::kUint8 && GetParam() != DataType::kUint16 &&
                         GetParam() != DataType::kUint32 && GetParam() != DataType::kUint64;
  for (size_t i = 0; i < image.data().size(); ++i) {
    image.data()[i] = static_cast<float>(i * 5) - (is_signed ? 60.0f : 0.0f);
  }
  write_nifti(dir / "x.nii.gz", image, GetParam(), 2);
  const Image back = read_nifti(dir / "x.nii.gz");
  EXPECT_EQ(back.header().source_type, GetParam());
  EXPECT_EQ(back.data(), image.data());
}

INSTANTIATE_TEST_SUITE_P(All, NiftiDatatypes,
                         ::testing::Values(DataType::kUint8, DataType::kInt8, DataType::kInt16, DataType::kUint16,
                                           DataType::kInt32, DataType::kUint32, DataType::kInt64, DataType::kUint64,
                                           DataType::kFloat32, DataType::kFloat64),
                         [](const auto& param_info) { return to_string(param_info.param); });

TEST(NiftiWrite, FailuresLeaveNoFileBehind) {
  TempDir dir;
  const Image image = random_image({3, 3, 3}, 1, 3);
  EXPECT_THROW(write_nifti(dir / "x.img", image), NiftiError);
  EXPECT_THROW(write_nifti(dir / "x.nii", image, DataType::kFloat32, 3), NiftiError);
  EXPECT_THROW(write_nifti(dir / "missing_dir" / "x.nii", image), NiftiError);
  Image bad = image;
  bad.header().affine(0, 0) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(write_nifti(dir / "x.nii", bad), NiftiError);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));

  ImageHeader wide;
  wide.dims = {40000, 1, 1};
  const Image long_line(wide, 1.0f);
  try {
    write_nifti(dir / "wide.nii", long_line, DataType::kFloat32, 1);
    FAIL() << "40000 voxels along x fit NIfTI-1";
  } catch (const NiftiError& e) {
    EXPECT_NE(std::string(e.what()).find("NIfTI-2"), std::string::npos) << e.what();
  }
  write_nifti(dir / "wide.nii", long_line, DataType::kUint8, 2);
  EXPECT_EQ(read_nifti(dir / "wide.nii").nx(), 40000);
  // Only the finished file: no temporary left over.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
}

TEST(NiftiRead, ScalingIsApplied) {
  TempDir dir;
  Nifti1Spec s;
  s.datatype = 4;
  s.bitpix = 16;
  s.scl_slope = 0.5f;
  s.scl_inter = 10.0f;
  std::vector<uint8_t> bytes = test::nifti1_header(s);
  test::append_values<int16_t>(bytes, {-4, -2, 0, 1, 2, 3, 100, 32767}, false);
  test::write_bytes(dir / "scaled.nii", bytes);
  const Image image = read_nifti(dir / "scaled.nii");
  EXPECT_EQ(image.data(), (std::vector<float>{8, 9, 10, 10.5f, 11, 11.5f, 60, 16393.5f}));
  EXPECT_EQ(image.header().source_type, DataType::kInt16);
}

TEST(NiftiRead, UnusableSlopeMeansNoScaling) {
  // Slope 0 means "no scaling" in the standard; nibabel writes NaN for unscaled images and reads any
  // non-finite slope as "no scaling" -- so do we.
  TempDir dir;
  const float values[] = {0.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
  for (float slope : values) {
    Nifti1Spec s;
    s.scl_slope = slope;
    s.scl_inter = 5.0f;
    std::vector<uint8_t> bytes = test::nifti1_header(s);
    test::append_values<float>(bytes, {1, 2, 3, 4, 5, 6, 7, 8}, false);
    test::write_bytes(dir / "s.nii", bytes);
    EXPECT_EQ(read_nifti(dir / "s.nii").data(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8})) << "slope " << slope;
  }
}

TEST(NiftiRead, NonFiniteVoxelValuesAreKept) {
  TempDir dir;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<uint8_t> bytes = test::nifti1_header(Nifti1Spec{});
  test::append_values<float>(bytes, {1, std::nanf(""), inf, -inf, 5, 6, 7, 8}, false);
  test::write_bytes(dir / "nan.nii", bytes);
  const Image image = read_nifti(dir / "nan.nii");
  EXPECT_TRUE(std::isnan(image.data()[1]));
  EXPECT_EQ(image.data()[2], inf);
  EXPECT_EQ(image.data()[3], -inf);
}

TEST(NiftiRead, BigEndianFilesAreSwapped) {
  TempDir dir;
  Nifti1Spec s;
  s.big_endian = true;
  s.datatype = 4;
  s.bitpix = 16;
  s.dim = {4, 2, 1, 1, 3, 1, 1, 1};
  s.pixdim = {1, 2, 3, 4, 2.5f, 0, 0, 0};
  s.scl_slope = 2.0f;
  s.scl_inter = -1.0f;
  std::vector<uint8_t> bytes = test::nifti1_header(s);
  test::append_values<int16_t>(bytes, {1, -2, 300, -400, 5000, -32768}, true);
  test::write_bytes(dir / "be.nii", bytes);
  const Image image = read_nifti(dir / "be.nii");
  EXPECT_EQ(image.header().dims, (std::array<int64_t, 3>{2, 1, 1}));
  EXPECT_EQ(image.nt(), 3);
  EXPECT_EQ(image.header().voxel_mm, (std::array<double, 3>{2, 3, 4}));
  EXPECT_DOUBLE_EQ(image.header().tr_s, 2.5);
  EXPECT_EQ(image.data(), (std::vector<float>{1, -5, 599, -801, 9999, -65537}));

  Nifti2Spec s2;
  s2.big_endian = true;
  s2.datatype = 64;
  s2.bitpix = 64;
  std::vector<uint8_t> b2 = test::nifti2_header(s2);
  test::append_values<double>(b2, {0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 1e300}, true);
  test::write_bytes(dir / "be2.nii", b2);
  const Image image2 = read_nifti(dir / "be2.nii");
  EXPECT_EQ(image2.data()[3], 3.5f);
  EXPECT_EQ(image2.data()[7], std::numeric_limits<float>::infinity());  // beyond float range
}

TEST(NiftiRead, QformOnlyFile) {
  // 90 degrees about z (quaternion a = cos 45, d = sin 45), qfac = -1 (pixdim[0] < 0) flips k.
  TempDir dir;
  Nifti1Spec s;
  s.sform_code = 0;
  s.qform_code = 1;
  s.pixdim = {-1, 2, 3, 4, 0, 0, 0, 0};
  s.quatern = {0.0f, 0.0f, static_cast<float>(std::sqrt(0.5)), 10.0f, 20.0f, 30.0f};
  s.srow = {};  // garbage-free, but must be ignored anyway
  std::vector<uint8_t> bytes = test::nifti1_header(s);
  test::append_values<float>(bytes, std::vector<float>(8, 1.0f), false);
  test::write_bytes(dir / "q.nii", bytes);
  Eigen::Matrix4d expected;
  expected << 0, -3, 0, 10,  //
      2, 0, 0, 20,           //
      0, 0, -4, 30,          //
      0, 0, 0, 1;
  EXPECT_LE((read_nifti(dir / "q.nii").header().affine - expected).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_EQ(read_nifti_header(dir / "q.nii").xform_code, 1);
}

TEST(NiftiRead, SformWinsOverQformAndPixdimIsTheFallback) {
  TempDir dir;
  Nifti1Spec s;
  s.qform_code = 1;
  s.quatern = {0, 0, 0, 7, 7, 7};
  s.sform_code = 2;
  s.srow = {{{-2, 0, 0, 90}, {0, 2, 0, -126}, {0, 0, 2, -72}}};
  s.pixdim = {1, 2, 2, 2, 0, 0, 0, 0};
  std::vector<uint8_t> bytes = test::nifti1_header(s);
  test::append_values<float>(bytes, std::vector<float>(8, 0.0f), false);
  test::write_bytes(dir / "sq.nii", bytes);
  Eigen::Matrix4d sform;
  sform << -2, 0, 0, 90, 0, 2, 0, -126, 0, 0, 2, -72, 0, 0, 0, 1;
  EXPECT_EQ(read_nifti_header(dir / "sq.nii").affine, sform);
  EXPECT_EQ(read_nifti_header(dir / "sq.nii").xform_code, 2);  // the sform's space, not the qform's

  s.qform_code = 0;
  s.sform_code = 0;
  s.pixdim = {1, 1.5f, 2.5f, 0, 0, 0, 0, 0};  // pixdim 0 reads as 1, as nifticlib does
  bytes = test::nifti1_header(s);
  test::append_values<float>(bytes, std::vector<float>(8, 0.0f), false);
  test::write_bytes(dir / "none.nii", bytes);
  const ImageHeader h = read_nifti_header(dir / "none.nii");
  EXPECT_EQ(h.affine, Eigen::Vector4d(1.5, 2.5, 1.0, 1.0).asDiagonal().toDenseMatrix());
  EXPECT_EQ(h.voxel_mm, (std::array<double, 3>{1.5, 2.5, 1.0}));
  EXPECT_EQ(h.xform_code, 0);  // no transform in the file: unknown space
}

TEST(NiftiWrite, KeepsTheSpaceOfTheAffine) {
  // An MNI-152 image (code 4) must stay MNI after a rewrite, in both sform and (rigid affine) qform.
  TempDir dir;
  ImageHeader h;
  h.dims = {3, 4, 5};
  h.voxel_mm = {2, 2, 2};
  h.affine << -2, 0, 0, 90, 0, 2, 0, -126, 0, 0, 2, -72, 0, 0, 0, 1;
  h.xform_code = 4;
  write_nifti(dir / "mni.nii", Image(h, 1.0f));
  EXPECT_EQ(read_nifti_header(dir / "mni.nii").xform_code, 4);
  std::ifstream in(dir / "mni.nii", std::ios::binary);
  char header[348];
  in.read(header, sizeof(header));
  int16_t qform_code = 0, sform_code = 0;
  std::memcpy(&qform_code, header + 252, 2);
  std::memcpy(&sform_code, header + 254, 2);
  EXPECT_EQ(qform_code, 4);
  EXPECT_EQ(sform_code, 4);
  // Unknown space (affine from voxel sizes only) is written as scanner space so readers use it.
  h.xform_code = 0;
  write_nifti(dir / "unknown.nii", Image(h, 1.0f));
  EXPECT_EQ(read_nifti_header(dir / "unknown.nii").xform_code, 1);
}

TEST(NiftiRead, RepetitionTimeHonoursUnits) {
  TempDir dir;
  struct Case {
    uint8_t units;
    float pixdim4;
    double tr_s;
  };
  const Case cases[] = {
      {2 | 8, 2.0f, 2.0}, {2 | 16, 1500.0f, 1.5}, {2 | 24, 800000.0f, 0.8}, {0, 0.75f, 0.75}, {2 | 32, 100.0f, 0.0}};
  for (const Case& c : cases) {
    Nifti1Spec s;
    s.dim = {4, 1, 1, 1, 2, 1, 1, 1};
    s.pixdim[4] = c.pixdim4;
    s.xyzt_units = c.units;
    std::vector<uint8_t> bytes = test::nifti1_header(s);
    test::append_values<float>(bytes, {1, 2}, false);
    test::write_bytes(dir / "t.nii", bytes);
    EXPECT_NEAR(read_nifti_header(dir / "t.nii").tr_s, c.tr_s, 1e-9) << "units " << int(c.units);
  }
}

TEST(NiftiRead, TrailingUnitDimensionsAreAccepted) {
  TempDir dir;
  Nifti2Spec s;
  s.dim = {5, 2, 1, 1, 2, 1, 1, 1};
  s.datatype = 2;
  s.bitpix = 8;
  std::vector<uint8_t> bytes = test::nifti2_header(s);
  test::append_values<uint8_t>(bytes, {1, 2, 3, 4}, false);
  test::write_bytes(dir / "five.nii", bytes);
  const Image image = read_nifti(dir / "five.nii");
  EXPECT_EQ(image.nt(), 2);
  EXPECT_EQ(image.data(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(NiftiRead, ExtensionsAndLargerFilesAreFine) {
  TempDir dir;
  Nifti1Spec s;
  s.vox_offset = 384;  // header, extender {1,0,0,0}, one 32-byte extension
  std::vector<uint8_t> bytes = test::nifti1_header(s);
  bytes[348] = 1;
  test::append_values<int32_t>(bytes, {32, 6}, false);  // esize, ecode (comment)
  bytes.resize(384, 'x');
  test::append_values<float>(bytes, {1, 2, 3, 4, 5, 6, 7, 8}, false);
  bytes.resize(bytes.size() + 100, 0);  // trailing bytes after the data are ignored
  test::write_bytes(dir / "ext.nii", bytes);
  EXPECT_EQ(read_nifti(dir / "ext.nii").data(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(NiftiRead, HeaderImagePairs) {
  TempDir dir;
  Nifti1Spec s;
  s.magic = std::string("ni1\0", 4);
  s.vox_offset = 0;
  test::write_bytes(dir / "pair.hdr", test::nifti1_header(s));
  std::vector<uint8_t> data;
  test::append_values<float>(data, {8, 7, 6, 5, 4, 3, 2, 1}, false);
  test::write_gzip_bytes(dir / "pair.img.gz", data);
  EXPECT_EQ(read_nifti(dir / "pair.hdr").data(), (std::vector<float>{8, 7, 6, 5, 4, 3, 2, 1}));
}

TEST(NiftiRead, LimitsAreConfigurable) {
  TempDir dir;
  write_nifti(dir / "x.nii", random_image({8, 8, 8}, 2, 5));
  EXPECT_NO_THROW(read_nifti(dir / "x.nii"));
  EXPECT_THROW(read_nifti(dir / "x.nii", NiftiReadLimits{.max_dim = 7}), NiftiError);
  EXPECT_THROW(read_nifti(dir / "x.nii", NiftiReadLimits{.max_bytes = 4000}), NiftiError);
  EXPECT_NO_THROW(read_nifti(dir / "x.nii", NiftiReadLimits{.max_dim = 8, .max_bytes = 4096}));
}

}  // namespace
}  // namespace rtf
