// Confound files: FSL .par without a header, a tsv with a header and n/a, column selection, and malformed files
// (ragged rows, words in data rows, unknown columns, empty) with errors that name the line.
#include <gtest/gtest.h>

#include "core/design/confounds.hpp"

namespace rtf {
namespace {

TEST(Confounds, FslParWithoutHeader) {
  const auto t = parse_confounds("0.01 -0.02 0.0 1.5 -2 0.25\n0 0 0 0 0 0\n", "m.par");
  ASSERT_EQ(t.values.rows(), 2);
  ASSERT_EQ(t.values.cols(), 6);
  EXPECT_EQ(t.names[0], "confound_1");
  EXPECT_DOUBLE_EQ(t.values(0, 4), -2.0);
}

TEST(Confounds, TsvWithHeaderNaAndSelection) {
  const auto t = parse_confounds("trans_x\ttrans_y\tframewise_displacement\r\n0.1\t0.2\tn/a\r\n0.3\t0.4\t0.05\r\n",
                                 "confounds.tsv", {"framewise_displacement", "trans_x"});
  ASSERT_EQ(t.values.cols(), 2);
  EXPECT_EQ(t.names[0], "framewise_displacement");
  EXPECT_DOUBLE_EQ(t.values(0, 0), 0.0);  // n/a counts as 0
  EXPECT_DOUBLE_EQ(t.values(1, 0), 0.05);
  EXPECT_DOUBLE_EQ(t.values(1, 1), 0.3);
}

TEST(Confounds, MalformedFilesNameTheProblem) {
  auto message = [](std::string_view text, const std::vector<std::string>& cols = {}) {
    try {
      parse_confounds(text, "c.tsv", cols);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("1 2 3\n4 5\n").find("line 2 has 2 values"), std::string::npos);
  EXPECT_NE(message("a b\n1 2\n3 x\n").find("line 3, column 2: 'x'"), std::string::npos);
  EXPECT_NE(message("a b\n1 2\n", {"c"}).find("no column named 'c'"), std::string::npos);
  EXPECT_NE(message("a b\n").find("no rows"), std::string::npos);
  EXPECT_NE(message("").find("no rows"), std::string::npos);
  EXPECT_NE(message("a b\n1 inf\n").find("line 2, column 2: 'inf' is not a number"), std::string::npos);
}

}  // namespace
}  // namespace rtf
