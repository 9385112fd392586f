// ctest-label: unit
// FSL VEST files for randomise: write/read round trips on random matrices, FEAT-style design.con and design.mat
// (names, /PPheights, /RequiredEffect, tabs, trailing spaces), CRLF files, plain matrices without a header, group
// files, and malformed files whose errors name the file and the right line.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/permutation/vest.hpp"
#include "tests/support/temp_dir.hpp"

namespace rtf {
namespace {

std::filesystem::path write_text(const test::TempDir& dir, std::string_view name, std::string_view text) {
  const std::filesystem::path path = dir / name;
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return path;
}

template <typename Reader>
std::string error_of(Reader read, const std::filesystem::path& path) {
  try {
    read(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Vest, RoundTripRandomMatrices) {
  test::TempDir dir("rtf-vest");
  std::mt19937 rng(20240611);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_real_distribution<double> exponent(-8.0, 8.0);
  const std::vector<std::pair<int, int>> shapes = {{1, 1}, {7, 3}, {13, 5}, {2, 11}, {101, 1}};
  for (const bool contrasts : {false, true}) {
    for (const auto& [rows, cols] : shapes) {
      VestMatrix m;
      m.values.resize(rows, cols);
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) m.values(r, c) = unit(rng) * std::pow(10.0, exponent(rng));
      }
      m.values(0, 0) = 0.0;
      if (contrasts) {
        for (int r = 0; r < rows; ++r) m.names.push_back("contrast " + std::to_string(r + 1));
        for (int r = 0; r < rows; ++r) m.ppheights.push_back(0.5 + r);
      }
      const auto path = dir / ("m" + std::to_string(rows) + "x" + std::to_string(cols) + ".vest");
      write_vest(path, m, contrasts);
      const VestMatrix back = read_vest(path);
      ASSERT_EQ(back.values.rows(), rows);
      ASSERT_EQ(back.values.cols(), cols);
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
          EXPECT_NEAR(back.values(r, c), m.values(r, c), 1e-6 * std::abs(m.values(r, c))) << r << "," << c;
        }
      }
      EXPECT_EQ(back.names, m.names);
      ASSERT_EQ(back.ppheights.size(), m.ppheights.size());
      for (size_t i = 0; i < m.ppheights.size(); ++i) EXPECT_NEAR(back.ppheights[i], m.ppheights[i], 1e-6);
      EXPECT_FALSE(std::filesystem::exists(dir / (path.filename().string() + ".part")));
    }
  }
}

TEST(Vest, FeatGroupMeanContrast) {
  test::TempDir dir("rtf-vest");
  const auto path = write_text(dir, "design.con",
                               "/ContrastName1\tgroup mean\n"
                               "/NumWaves\t1\n"
                               "/NumContrasts\t1\n"
                               "/PPheights\t\t1.000000e+00\n"
                               "/RequiredEffect\t\t0.973\n"
                               "\n"
                               "/Matrix\n"
                               "1.000000e+00 \n");
  const VestMatrix m = read_vest(path);
  ASSERT_EQ(m.values.rows(), 1);
  ASSERT_EQ(m.values.cols(), 1);
  EXPECT_EQ(m.values(0, 0), 1.0);
  EXPECT_EQ(m.names, std::vector<std::string>{"group mean"});
  EXPECT_EQ(m.ppheights, std::vector<double>{1.0});
}

TEST(Vest, FeatFirstLevelContrastsAndDesign) {
  test::TempDir dir("rtf-vest");
  const auto con = write_text(dir, "design.con",
                              "/ContrastName1\ttask\n"
                              "/ContrastName2\t-task  \n"
                              "/NumWaves\t3\n"
                              "/NumContrasts\t2\n"
                              "/PPheights\t\t6.112040e-01\t6.112040e-01\n"
                              "/RequiredEffect\t\t1.498\t1.498\n"
                              "\n"
                              "/Matrix\n"
                              "1.000000e+00 0.000000e+00 0.000000e+00 \n"
                              "-1.000000e+00 0.000000e+00 0.000000e+00 \n"
                              "\n");
  const VestMatrix c = read_vest(con);
  ASSERT_EQ(c.values.rows(), 2);
  ASSERT_EQ(c.values.cols(), 3);
  EXPECT_EQ(c.values(1, 0), -1.0);
  EXPECT_EQ(c.names, (std::vector<std::string>{"task", "-task"}));
  EXPECT_EQ(c.ppheights, (std::vector<double>{0.611204, 0.611204}));

  const auto mat = write_text(dir, "design.mat",
                              "/NumWaves\t2\n"
                              "/NumPoints\t4\n"
                              "/PPheights\t\t1.000000e+00\t2.000000e+00\n"
                              "\n"
                              "/Matrix\n"
                              "1.000000e+00\t-5.000000e-01\t\n"
                              "1.000000e+00\t5.000000e-01\n"
                              "1.000000e+00   1.5e+00\n"
                              "1\t-1.5\n");
  const VestMatrix d = read_vest(mat);
  ASSERT_EQ(d.values.rows(), 4);
  ASSERT_EQ(d.values.cols(), 2);
  EXPECT_TRUE(d.names.empty());
  EXPECT_EQ(d.values(2, 1), 1.5);
  EXPECT_EQ(d.values(3, 1), -1.5);
}

TEST(Vest, WindowsLineEndings) {
  test::TempDir dir("rtf-vest");
  const auto path = write_text(
      dir, "crlf.con", "/ContrastName1\tA > B\r\n/NumWaves\t2\r\n/NumContrasts\t1\r\n\r\n/Matrix\r\n1 -1 \r\n\r\n");
  const VestMatrix m = read_vest(path);
  ASSERT_EQ(m.values.rows(), 1);
  ASSERT_EQ(m.values.cols(), 2);
  EXPECT_EQ(m.values(0, 1), -1.0);
  EXPECT_EQ(m.names, std::vector<std::string>{"A > B"});
  const auto groups = write_text(dir, "crlf.grp", "/NumWaves 1\r\n/NumPoints 3\r\n/Matrix\r\n1\r\n1\r\n2\r\n");
  EXPECT_EQ(read_vest_groups(groups), (std::vector<int>{1, 1, 2}));
}

TEST(Vest, PlainMatrixWithoutHeader) {
  test::TempDir dir("rtf-vest");
  const auto path = write_text(dir, "plain.txt", "\n1 -0.5 1e-3\n+2\t0   -1E+2  \n\n3.25 .5 7\n");
  const VestMatrix m = read_vest(path);
  ASSERT_EQ(m.values.rows(), 3);
  ASSERT_EQ(m.values.cols(), 3);
  EXPECT_EQ(m.values(0, 1), -0.5);
  EXPECT_EQ(m.values(0, 2), 1e-3);
  EXPECT_EQ(m.values(1, 0), 2.0);
  EXPECT_EQ(m.values(1, 2), -100.0);
  EXPECT_EQ(m.values(2, 1), 0.5);
  EXPECT_TRUE(m.names.empty());
  EXPECT_TRUE(m.ppheights.empty());
}

TEST(Vest, MalformedFilesNameTheFileAndLine) {
  struct Case {
    std::string name;
    std::string text;
    std::string line;  // "line N:"
    std::string what;  // part of the message
  };
  const std::vector<Case> cases = {
      {"no_matrix.mat", "/NumWaves 2\n/NumPoints 2\n1 2\n3 4\n", "line 3:", "before /Matrix"},
      {"header_only.mat", "/NumWaves 1\n/NumPoints 1\n\n", "line 3:", "without a /Matrix"},
      {"word.mat", "/NumWaves 2\n/NumPoints 2\n/Matrix\n1 2\n3 x\n", "line 5:", "'x', is not a number"},
      {"plusplus.txt", "1 2\n++2 3\n", "line 2:", "'++2', is not a number"},
      {"ragged.txt", "1 2 3\n4 5 6\n7 8\n", "line 3:", "has 2 values but the first row (line 1) has 3"},
      {"waves.mat", "/NumWaves 3\n/NumPoints 1\n/Matrix\n1 2\n", "line 4:", "/NumWaves (line 1) says 3"},
      {"few.mat", "/NumWaves\t1\n/NumPoints\t3\n\n/Matrix\n1\n2\n\n",
       "line 6:", "ends after 2 rows but /NumPoints (line 2) says 3"},
      {"many.con", "/NumWaves 1\n/NumContrasts 1\n/Matrix\n1\n2\n",
       "line 5:", "more rows than /NumContrasts (line 2) says: 1"},
      {"nan.mat", "/NumWaves 2\n/NumPoints 1\n/Matrix\n1 nan\n", "line 4:", "'nan', is not finite"},
      {"inf.txt", "1 2\n-inf 3\n", "line 2:", "'-inf', is not finite"},
      {"huge.txt", "1 2\n1e999 3\n", "line 2:", "out of the range"},
      {"empty_matrix.mat", "/NumWaves 2\n/NumPoints 0\n/Matrix\n", "line 3:", "no rows of numbers after /Matrix"},
      {"empty.txt", "", "line 1:", "empty"},
      {"crlf.mat", "/NumWaves\t2\r\n/NumPoints\t2\r\n/Matrix\r\n1 2\r\n3\r\n", "line 5:", "/NumWaves (line 1) says 2"},
      {"bad_waves.mat", "/NumWaves two\n/NumPoints 1\n/Matrix\n1\n", "line 1:", "/NumWaves 'two'"},
      {"bad_points.mat", "/NumWaves 1\n/NumPoints 1 2\n/Matrix\n1\n", "line 2:", "exactly one integer"},
      {"disagree.con", "/NumWaves 1\n/NumPoints 2\n/NumContrasts 1\n/Matrix\n1\n", "line 3:", "disagrees"},
      {"name.con", "/ContrastName1\ta\n/ContrastName3\tc\n/NumWaves 1\n/NumContrasts 2\n/Matrix\n1\n-1\n",
       "line 2:", "/ContrastName3 but the matrix has only 2 rows"},
      {"pph.mat", "/NumWaves 1\n/NumPoints 1\n/PPheights\t1 oops\n/Matrix\n1\n", "line 3:", "'oops'"},
  };
  test::TempDir dir("rtf-vest");
  for (const Case& c : cases) {
    const auto path = write_text(dir, c.name, c.text);
    const std::string message = error_of(read_vest, path);
    EXPECT_NE(message.find(c.name), std::string::npos) << c.name << ": " << message;
    EXPECT_NE(message.find(c.line), std::string::npos) << c.name << ": " << message;
    EXPECT_NE(message.find(c.what), std::string::npos) << c.name << ": " << message;
  }
  const std::string missing = error_of(read_vest, dir / "no_such_design.mat");
  EXPECT_NE(missing.find("no_such_design.mat"), std::string::npos) << missing;
  EXPECT_NE(missing.find("cannot open"), std::string::npos) << missing;
}

TEST(Vest, GroupFiles) {
  test::TempDir dir("rtf-vest");
  const auto grp = write_text(dir, "design.grp", "/NumWaves\t1\n/NumPoints\t5\n\n/Matrix\n1\n1\n2\n2.0\n-3\n");
  EXPECT_EQ(read_vest_groups(grp), (std::vector<int>{1, 1, 2, 2, -3}));
  EXPECT_EQ(read_vest_groups(write_text(dir, "plain.grp", "1\n2\n3\n")), (std::vector<int>{1, 2, 3}));

  const auto half = write_text(dir, "half.grp", "/NumWaves 1\n/NumPoints 3\n/Matrix\n1\n1\n2.5\n");
  const std::string m1 = error_of(read_vest_groups, half);
  EXPECT_NE(m1.find("half.grp: line 6:"), std::string::npos) << m1;
  EXPECT_NE(m1.find("not an integer"), std::string::npos) << m1;
  const std::string m2 = error_of(read_vest_groups, write_text(dir, "big.grp", "1\n1e12\n"));
  EXPECT_NE(m2.find("big.grp: line 2:"), std::string::npos) << m2;
  const std::string m3 = error_of(read_vest_groups, write_text(dir, "wide.grp", "\n1 1\n2 2\n"));
  EXPECT_NE(m3.find("wide.grp: line 2:"), std::string::npos) << m3;
  EXPECT_NE(m3.find("one value per row"), std::string::npos) << m3;
  const std::string m4 = error_of(read_vest_groups, write_text(dir, "word.grp", "1\nA\n"));
  EXPECT_NE(m4.find("word.grp: line 2:"), std::string::npos) << m4;
}

TEST(Vest, WriteRefusesWhatCannotBeReadBack) {
  test::TempDir dir("rtf-vest");
  VestMatrix m;
  m.values = Eigen::MatrixXd::Ones(2, 2);
  m.values(1, 0) = std::nan("");
  EXPECT_THROW(write_vest(dir / "nan.mat", m), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(dir / "nan.mat"));
  EXPECT_THROW(write_vest(dir / "empty.mat", VestMatrix{}), std::runtime_error);
  EXPECT_THROW(write_vest(dir / "no_dir" / "x.mat", VestMatrix{Eigen::MatrixXd::Ones(1, 1), {}, {}}),
               std::runtime_error);
}

}  // namespace
}  // namespace rtf
