// The MAT-v5, .npy and zip readers used for SPM's reference numbers: files built here from the format
// descriptions (numeric and cell arrays, compressed elements, C and Fortran order, stored and deflated members)
// read back exactly; truncated, corrupted or unsupported input gives ArrayFileError, never a crash.
// ctest-label: unit
#include <gtest/gtest.h>

#include <random>

#include "core/io/mat_file.hpp"
#include "core/io/npy_file.hpp"
#include "core/io/zip_archive.hpp"
#include "tests/support/array_file_bytes.hpp"
#include "tests/support/data_paths.hpp"

namespace rtf {
namespace {

using test::Bytes;

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes sample_mat() {
  return concat({test::mat_header(), test::mat_double("x", 2, 3, {1, 2, 3, 4, 5, 6.5}),
                 test::mat_cell("c", 1, 2, {test::mat_double("", 1, 1, {7}), test::mat_double("", 3, 1, {8, 9, 10})}),
                 test::mat_compressed(test::mat_double("z", 1, 2, {-1, 1e300}))});
}

// Every prefix and many random corruptions of `bytes` either parse or throw ArrayFileError.
template <typename Parse>
void survives_damage(const Bytes& bytes, Parse parse) {
  for (size_t n = 0; n < bytes.size(); ++n) {
    const Bytes prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    try {
      parse(prefix);
    } catch (const io::ArrayFileError&) {
    }
  }
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 4000; ++trial) {
    Bytes damaged = bytes;
    for (int k = 0; k < 1 + trial % 4; ++k) damaged[rng() % damaged.size()] = static_cast<uint8_t>(rng());
    try {
      parse(damaged);
    } catch (const io::ArrayFileError&) {
    }
  }
}

TEST(MatFile, ReadsNumericCellAndCompressedArrays) {
  const auto vars = io::parse_mat(sample_mat(), "sample.mat");
  ASSERT_EQ(vars.size(), 3u);
  const io::MatArray& x = vars.at("x");
  EXPECT_EQ(x.kind, io::MatArray::Kind::kNumeric);
  EXPECT_EQ(x.dims, (std::vector<int64_t>{2, 3}));
  const Eigen::MatrixXd m = x.matrix();
  EXPECT_EQ(m(0, 0), 1);
  EXPECT_EQ(m(1, 0), 2);  // column-major, as MATLAB
  EXPECT_EQ(m(1, 2), 6.5);
  const io::MatArray& c = vars.at("c");
  ASSERT_EQ(c.kind, io::MatArray::Kind::kCell);
  ASSERT_EQ(c.cells.size(), 2u);
  EXPECT_EQ(c.cells[0].values, std::vector<double>{7});
  EXPECT_EQ(c.cells[1].values, (std::vector<double>{8, 9, 10}));
  EXPECT_EQ(vars.at("z").values, (std::vector<double>{-1, 1e300}));
  EXPECT_THROW(c.matrix(), io::ArrayFileError);
}

TEST(MatFile, RefusesWhatItDoesNotRead) {
  Bytes big_endian = sample_mat();
  big_endian[126] = 'M';
  big_endian[127] = 'I';
  EXPECT_THROW(io::parse_mat(big_endian, "be.mat"), io::ArrayFileError);
  EXPECT_THROW(io::parse_mat(Bytes(100, 0), "short.mat"), io::ArrayFileError);
  // A char array (class 4) is listed as unsupported, not misread.
  const auto vars = io::parse_mat(concat({test::mat_header(),
                                          [] {
                                            Bytes b = test::mat_double("s", 1, 2, {0, 0});
                                            b[16] = 4;  // array flags' class byte: mxCHAR_CLASS
                                            return b;
                                          }()}),
                                  "char.mat");
  EXPECT_EQ(vars.at("s").kind, io::MatArray::Kind::kUnsupported);
  // Nesting deeper than the limit.
  Bytes nested = test::mat_double("", 1, 1, {1});
  for (int depth = 0; depth < 20; ++depth) nested = test::mat_cell("", 1, 1, {nested});
  EXPECT_THROW(io::parse_mat(concat({test::mat_header(), nested}), "deep.mat"), io::ArrayFileError);
  // Data that disagrees with the dimensions.
  EXPECT_THROW(io::parse_mat(concat({test::mat_header(), test::mat_double("x", 3, 3, {1, 2})}), "short.mat"),
               io::ArrayFileError);
}

TEST(MatFile, DamagedFilesNeverCrash) {
  survives_damage(sample_mat(), [](const Bytes& b) { io::parse_mat(b, "damaged.mat"); });
}

TEST(Npy, CAndFortranOrder) {
  const auto c = io::parse_npy(test::npy_f8({2, 3}, false, {1, 2, 3, 4, 5, 6}), "c.npy");
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.matrix()(0, 2), 3);
  EXPECT_EQ(c.matrix()(1, 0), 4);
  const auto f = io::parse_npy(test::npy_f8({2, 3}, true, {1, 4, 2, 5, 3, 6}), "f.npy");  // same matrix
  EXPECT_EQ(f.values, c.values);
  const auto cube = io::parse_npy(test::npy_f8({2, 2, 2}, true, {0, 4, 2, 6, 1, 5, 3, 7}), "cube.npy");
  EXPECT_EQ(cube.values, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_THROW(cube.matrix(), io::ArrayFileError);
  const auto vec = io::parse_npy(test::npy_f8({3}, false, {1, 2, 3}), "v.npy");
  EXPECT_EQ(vec.matrix().rows(), 3);
  const auto scalar = io::parse_npy(test::npy_f8({}, false, {42}), "s.npy");
  EXPECT_EQ(scalar.matrix()(0, 0), 42);
}

TEST(Npy, RefusesOtherDtypesAndBadSizes) {
  Bytes f4 = test::npy_f8({2}, false, {1, 2});
  const std::string header(f4.begin(), f4.end());
  f4[header.find("<f8") + 2] = '4';
  EXPECT_THROW(io::parse_npy(f4, "f4.npy"), io::ArrayFileError);
  Bytes short_data = test::npy_f8({3}, false, {1, 2, 3});
  short_data.pop_back();
  EXPECT_THROW(io::parse_npy(short_data, "short.npy"), io::ArrayFileError);
  Bytes huge = test::npy_f8({2}, false, {1, 2});
  const std::string h2(huge.begin(), huge.end());
  const size_t at = h2.find("(2,)");
  huge.erase(huge.begin() + static_cast<std::ptrdiff_t>(at), huge.begin() + static_cast<std::ptrdiff_t>(at + 4));
  const std::string big = "(99999999999,99999999999)";
  huge.insert(huge.begin() + static_cast<std::ptrdiff_t>(at), big.begin(), big.end());
  EXPECT_THROW(io::parse_npy(huge, "huge.npy"), io::ArrayFileError);
  survives_damage(test::npy_f8({2, 3}, true, {1, 2, 3, 4, 5, 6}),
                  [](const Bytes& b) { io::parse_npy(b, "damaged.npy"); });
}

TEST(Zip, StoredAndDeflatedMembers) {
  const Bytes a = test::npy_f8({2}, false, {1, 2});
  Bytes large(200000);  // several stored deflate blocks
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<uint8_t>(i * 7);
  for (const bool deflate : {false, true}) {
    const auto members = io::read_zip_members(test::zip_archive({{"a.npy", a}, {"large.bin", large}}, deflate),
                                              deflate ? "deflated.zip" : "stored.zip");
    ASSERT_EQ(members.size(), 2u);
    EXPECT_EQ(members.at("a.npy"), a);
    EXPECT_EQ(members.at("large.bin"), large);
  }
  Bytes bad_crc = test::zip_archive({{"a.npy", a}}, false);
  bad_crc[30 + 5 + 12] ^= 0xff;  // a data byte of the member: the CRC no longer matches
  EXPECT_THROW(io::read_zip_members(bad_crc, "crc.zip"), io::ArrayFileError);
  EXPECT_THROW(io::read_zip_members(Bytes(10, 0), "tiny.zip"), io::ArrayFileError);
  survives_damage(test::zip_archive({{"a.npy", a}, {"b.npy", a}}, true),
                  [](const Bytes& b) { io::read_zip_members(b, "damaged.zip"); });
}

TEST(Npz, RealFileFromNipy) {
  const auto path = test::installed_data("nipy/spm_dmtx.npz");
  if (!path) GTEST_SKIP() << test::missing_installed_data("nipy/spm_dmtx.npz");
  const auto arrays = io::read_npz(*path);
  ASSERT_EQ(arrays.size(), 3u);
  EXPECT_EQ(arrays.at("arr_0").shape, (std::vector<int64_t>{100, 4}));                     // stored Fortran order
  EXPECT_EQ(arrays.at("cosbf_dt_1_nt_20_hcut_0p1").shape, (std::vector<int64_t>{20, 4}));  // C order
  EXPECT_TRUE(arrays.at("arr_0").matrix().col(3).isOnes(0.0));  // the constant column, whichever the order
  EXPECT_TRUE(arrays.at("cosbf_dt_1_nt_20_hcut_0p1").matrix().col(0).isOnes(0.0));
  EXPECT_THROW(io::read_npz(*path / "not-a-dir"), io::ArrayFileError);
}

}  // namespace
}  // namespace rtf
