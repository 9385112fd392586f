// ctest-label: unit
// Broken and hostile NIfTI files: each must give NiftiError whose message names the file and the problem
// (never a crash, a hang or a huge allocation). The files are generated into a temporary directory.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/io/nifti_io.hpp"
#include "tests/support/nifti_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

using test::Nifti1Spec;
using test::Nifti2Spec;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// A valid 2x2x2 float32 file's bytes from a spec, with data.
std::vector<uint8_t> with_data(std::vector<uint8_t> header, size_t values = 8) {
  test::append_values<float>(header, std::vector<float>(values, 1.0f), false);
  return header;
}

std::vector<uint8_t> n1(const std::function<void(Nifti1Spec&)>& edit) {
  Nifti1Spec s;
  edit(s);
  return with_data(test::nifti1_header(s));
}

std::vector<uint8_t> n2(const std::function<void(Nifti2Spec&)>& edit) {
  Nifti2Spec s;
  edit(s);
  return with_data(test::nifti2_header(s));
}

struct BrokenCase {
  const char* name;
  const char* file_name;
  std::function<void(const std::filesystem::path&)> make;  // writes the file (or not)
  const char* expected;                                    // text the message must contain
};

auto bytes_file(std::function<std::vector<uint8_t>()> bytes) {
  return [bytes](const std::filesystem::path& p) { test::write_bytes(p, bytes()); };
}

std::vector<BrokenCase> broken_cases() {
  return {
      {"Missing", "missing.nii", [](const auto&) {}, "file not found"},
      {"Directory", "dir.nii", [](const auto& p) { std::filesystem::create_directory(p); }, "not a regular file"},
      {"Empty", "empty.nii", bytes_file([] { return std::vector<uint8_t>{}; }), "only 0 bytes"},
      {"Text", "text.nii", bytes_file([] { return std::vector<uint8_t>(400, 'a'); }), "not a NIfTI file"},
      {"WrongExtension", "image.txt", bytes_file([] { return n1([](auto&) {}); }), "extension"},
      {"ImgHalfOfPair", "image.img", bytes_file([] { return n1([](auto&) {}); }), "open the .hdr"},
      {"TruncatedHeader", "short.nii", bytes_file([] {
         auto b = n1([](auto&) {});
         b.resize(200);
         return b;
       }),
       "truncated header"},
      {"TruncatedNifti2Header", "short2.nii", bytes_file([] {
         auto b = n2([](auto&) {});
         b.resize(400);
         return b;
       }),
       "truncated header"},
      {"AnalyzeMagic", "analyze.nii", bytes_file([] { return n1([](auto& s) { s.magic = std::string(4, '\0'); }); }),
       "ANALYZE"},
      {"BadMagic", "magic.nii", bytes_file([] { return n1([](auto& s) { s.magic = "abc"; }); }), "magic"},
      {"Nifti2MagicInNifti1", "magic12.nii",
       bytes_file([] { return n1([](auto& s) { s.magic = std::string("n+2\0", 4); }); }), "magic"},
      {"Nifti2SignatureDamaged", "sig.nii",
       bytes_file([] { return n2([](auto& s) { s.magic = std::string("n+2\0\n\x1a\n\n", 8); }); }), "signature"},
      {"PairMagicInNii", "pair_magic.nii",
       bytes_file([] { return n1([](auto& s) { s.magic = std::string("ni1\0", 4); }); }), ".hdr/.img pair"},
      {"AsciiHeader", "ascii.nii", bytes_file([] {
         const std::string text = "<nifti_image\n  ndim = '3'\n  nx = '2' />\n" + std::string(400, ' ');
         return std::vector<uint8_t>(text.begin(), text.end());
       }),
       "ASCII"},
      {"Dim0Zero", "dim0.nii", bytes_file([] { return n1([](auto& s) { s.dim[0] = 0; }); }), "dim[0]"},
      {"Dim0Eight", "dim8.nii", bytes_file([] { return n1([](auto& s) { s.dim[0] = 8; }); }), "dim[0]"},
      {"NegativeDim", "neg.nii", bytes_file([] { return n1([](auto& s) { s.dim[2] = -5; }); }), "dim[2] = -5"},
      {"ZeroDim", "zero.nii", bytes_file([] { return n1([](auto& s) { s.dim[1] = 0; }); }), "dim[1] = 0"},
      {"FifthDimension", "five.nii", bytes_file([] { return n1([](auto& s) { s.dim = {5, 2, 2, 2, 1, 3, 1, 1}; }); }),
       "dim[5] = 3"},
      {"AbsurdDim", "huge.nii",
       bytes_file([] { return n2([](auto& s) { s.dim = {3, 2, int64_t{1} << 40, 2, 1, 1, 1, 1}; }); }),
       "exceeds the limit"},
      {"VoxelCountOverflow", "overflow.nii",
       bytes_file([] { return n2([](auto& s) { s.dim = {4, 65536, 65536, 65536, 65536, 1, 1, 1}; }); }), "overflows"},
      {"TooManyBytes", "big.nii",
       bytes_file([] { return n2([](auto& s) { s.dim = {4, 65536, 65536, 65536, 2, 1, 1, 1}; }); }),
       "exceeds the limit of"},
      {"Complex", "complex.nii", bytes_file([] { return n1([](auto& s) { s.datatype = 32; }); }), "complex64"},
      {"Rgb", "rgb.nii", bytes_file([] { return n1([](auto& s) { s.datatype = 128; }); }), "RGB24"},
      {"UnknownDatatype", "dt.nii", bytes_file([] { return n1([](auto& s) { s.datatype = 77; }); }),
       "unknown datatype code 77"},
      {"TruncatedData", "data.nii", bytes_file([] {
         auto b = n1([](auto&) {});
         b.resize(b.size() - 3);
         return b;
       }),
       "truncated"},
      {"VoxOffsetBeyondFile", "offset.nii", bytes_file([] { return n1([](auto& s) { s.vox_offset = 1e6f; }); }),
       "truncated"},
      {"VoxOffsetNan", "offnan.nii", bytes_file([] { return n1([](auto& s) { s.vox_offset = kNan; }); }),
       "vox_offset is nan"},
      {"VoxOffsetNegative", "offneg.nii", bytes_file([] { return n2([](auto& s) { s.vox_offset = -16; }); }),
       "vox_offset is -16"},
      {"VoxOffsetAbsurd", "offbig.nii", bytes_file([] { return n1([](auto& s) { s.vox_offset = 1e30f; }); }),
       "absurdly large"},
      {"InterceptNan", "inter.nii", bytes_file([] {
         return n1([](auto& s) {
           s.scl_slope = 2;
           s.scl_inter = kNan;
         });
       }),
       "scl_inter is nan"},
      {"SformNan", "sform.nii", bytes_file([] { return n1([](auto& s) { s.srow[1][2] = kNan; }); }), "sform"},
      {"QformNan", "qform.nii", bytes_file([] {
         return n2([](auto& s) {
           s.sform_code = 0;
           s.qform_code = 1;
           s.quatern[4] = std::numeric_limits<double>::infinity();
         });
       }),
       "qform"},
      {"PixdimNan", "pixdim.nii", bytes_file([] { return n1([](auto& s) { s.pixdim[1] = kNan; }); }), "pixdim[1]"},
      {"RepetitionTimeNegative", "tr.nii", bytes_file([] {
         return n1([](auto& s) {
           s.dim = {4, 2, 2, 1, 2, 1, 1, 1};
           s.pixdim[4] = -2;
         });
       }),
       "pixdim[4]"},
      {"GzipContentInNii", "gz.nii", [](const auto& p) { test::write_gzip_bytes(p, n1([](auto&) {})); },
       "gzip-compressed"},
      {"GzTruncatedHeader", "short.nii.gz",
       [](const auto& p) {
         auto b = n1([](auto&) {});
         b.resize(100);
         test::write_gzip_bytes(p, b);
       },
       "truncated header"},
      {"GzTruncatedData", "data.nii.gz",
       [](const auto& p) {
         auto b = n1([](auto&) {});
         b.resize(b.size() - 1);
         test::write_gzip_bytes(p, b);
       },
       "voxel data truncated"},
      {"PairWithoutImg", "lonely.hdr", bytes_file([] {
         return test::nifti1_header([] {
           Nifti1Spec s;
           s.magic = std::string("ni1\0", 4);
           return s;
         }());
       }),
       "no .img"},
  };
}

class NiftiBroken : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(NiftiBroken, GivesNiftiErrorNamingFileAndProblem) {
  const BrokenCase& c = GetParam();
  test::TempDir dir;
  const auto path = dir / c.file_name;
  c.make(path);
  try {
    (void)read_nifti(path);
    FAIL() << c.name << ": read_nifti accepted the file";
  } catch (const NiftiError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << "expected \"" << c.expected << "\" in: " << message;
    EXPECT_EQ(e.file(), path);
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, NiftiBroken, ::testing::ValuesIn(broken_cases()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(NiftiBrokenGz, DamagedCompressedStreamsAreErrors) {
  test::TempDir dir;
  ImageHeader h;
  h.dims = {32, 32, 16};
  Image noise(h);
  uint32_t state = 12345;
  for (float& v : noise.data()) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8);  // incompressible
  }
  write_nifti(dir / "ok.nii.gz", noise);
  const std::vector<uint8_t> good = test::read_bytes(dir / "ok.nii.gz");
  ASSERT_GT(good.size(), 10000u);

  std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  test::write_bytes(dir / "cut.nii.gz", cut);
  EXPECT_NO_THROW(read_nifti_header(dir / "cut.nii.gz"));  // the header itself is intact
  EXPECT_THROW(read_nifti(dir / "cut.nii.gz"), NiftiError);
  // A reference grid (apply -r) is read whole, not kept: the cut is refused naming the file (issue 35).
  EXPECT_EQ(read_complete_nifti_header(dir / "ok.nii.gz").dims, h.dims);
  try {
    read_complete_nifti_header(dir / "cut.nii.gz");
    ADD_FAILURE() << "a .nii.gz cut in half taken for a whole file";
  } catch (const NiftiError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.nii.gz: file is truncated"), std::string::npos) << e.what();
  }

  std::vector<uint8_t> bad_crc = good;
  bad_crc[bad_crc.size() - 6] ^= 0xFF;  // inside the CRC-32 of the gzip trailer
  test::write_bytes(dir / "crc.nii.gz", bad_crc);
  EXPECT_THROW(read_nifti(dir / "crc.nii.gz"), NiftiError);
  EXPECT_THROW(read_complete_nifti_header(dir / "crc.nii.gz"), NiftiError);

  std::vector<uint8_t> flipped = good;
  for (size_t i = good.size() / 3; i < good.size() / 3 + 64; ++i) flipped[i] ^= 0x5A;
  test::write_bytes(dir / "flipped.nii.gz", flipped);
  EXPECT_THROW(read_nifti(dir / "flipped.nii.gz"), NiftiError);
}

long peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(NiftiBrokenHostile, TinyFilesClaimingGigabytesCostNoMemory) {
  // 1024^3 float32 voxels (4 GiB, within the default limits) claimed by files of a few hundred bytes.
  test::TempDir dir;
  const auto bytes = n2([](auto& s) { s.dim = {3, 1024, 1024, 1024, 1, 1, 1, 1}; });
  test::write_bytes(dir / "huge.nii", bytes);
  test::write_gzip_bytes(dir / "huge.nii.gz", bytes);
  const long before = peak_rss_kb();
  EXPECT_THROW(read_nifti(dir / "huge.nii"), NiftiError);     // size check, before any allocation
  EXPECT_THROW(read_nifti(dir / "huge.nii.gz"), NiftiError);  // result grows only with real data
  EXPECT_LT(peak_rss_kb() - before, 256 * 1024) << "kB of extra peak memory";
}

TEST(NiftiBrokenHeader, HeaderOnlyReadChecksTheSameThings) {
  test::TempDir dir;
  test::write_bytes(dir / "t.nii", n1([](auto& s) { s.datatype = 1792; }));
  EXPECT_THROW(read_nifti_header(dir / "t.nii"), NiftiError);
  auto truncated = n1([](auto&) {});
  truncated.resize(360);
  test::write_bytes(dir / "u.nii", truncated);
  EXPECT_THROW(read_nifti_header(dir / "u.nii"), NiftiError);  // uncompressed: size checked up front
}

}  // namespace
}  // namespace rtf
