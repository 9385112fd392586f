// Contrast expressions by name: weights for simple and weighted differences, names containing '-', F contrasts,
// named contrasts, and errors that name the unknown condition.
// ctest-label: unit
#include <gtest/gtest.h>

#include "core/design/contrast.hpp"

namespace rtf {
namespace {

const std::vector<std::string> kColumns = {"faces",      "houses", "cars",    "faces_derivative",
                                           "face-happy", "2back",  "drift_1", "constant"};

Eigen::VectorXd weights(std::initializer_list<double> w) {
  Eigen::VectorXd v = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(kColumns.size()));
  Eigen::Index i = 0;
  for (const double x : w) v(i++) = x;
  return v;
}

void expect_weights(std::string_view expression, const Eigen::VectorXd& expected) {
  const Eigen::VectorXd w = parse_contrast(expression, kColumns);
  EXPECT_TRUE(w == expected) << expression << ": got " << w.transpose();
}

void expect_error(std::string_view expression, std::string_view fragment) {
  try {
    parse_contrast(expression, kColumns);
    ADD_FAILURE() << "no error for '" << expression << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Contrast, Expressions) {
  expect_weights("faces", weights({1}));
  expect_weights("faces-houses", weights({1, -1}));
  expect_weights(" faces - houses ", weights({1, -1}));
  expect_weights("faces+houses", weights({1, 1}));
  expect_weights("2*faces-houses-cars", weights({2, -1, -1}));
  expect_weights("2 * faces - houses - cars", weights({2, -1, -1}));
  expect_weights("-faces", weights({-1}));
  expect_weights("0.5*faces + 0.5*houses - cars", weights({0.5, 0.5, -1}));
  expect_weights("1e-1*faces", weights({0.1}));
  expect_weights("3 cars", weights({0, 0, 3}));
  expect_weights("faces + faces - houses", weights({2, -1}));  // repeated names add up
  expect_weights("faces_derivative", weights({0, 0, 0, 1}));   // longest name wins over "faces"
  expect_weights("face-happy - faces", weights({-1, 0, 0, 0, 1}));
  expect_weights("2back-faces", weights({-1, 0, 0, 0, 0, 1}));  // a name starting with a digit
  expect_weights("2*2back", weights({0, 0, 0, 0, 0, 2}));
  expect_weights("constant", weights({0, 0, 0, 0, 0, 0, 0, 1}));
}

TEST(Contrast, ErrorsNameTheProblem) {
  expect_error("faces-hoses", "unknown condition 'hoses'");
  expect_error("face", "unknown condition 'face'");
  expect_error("faces-", "ends where a condition name should follow");
  expect_error("", "is empty");
  expect_error("   ", "is empty");
  expect_error("faces houses", "expected '+' or '-'");
  expect_error("2*", "ends with a weight");
  expect_error("faces--houses", "expects a condition name");
  expect_error("faces-faces", "all weights zero");
  expect_error("0*faces", "all weights zero");
  expect_error("faces/2", "unknown condition 'faces/2'");
  try {
    parse_contrast("faces-hoses", kColumns);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("faces, houses, cars"), std::string::npos) << e.what();  // lists the names
  }
}

TEST(Contrast, FContrastsAndNames) {
  const Eigen::MatrixXd f = parse_f_contrast("faces; houses ;cars-faces", kColumns);
  ASSERT_EQ(f.rows(), 3);
  ASSERT_EQ(f.cols(), static_cast<Eigen::Index>(kColumns.size()));
  EXPECT_EQ(Eigen::VectorXd(f.row(0).transpose()), weights({1}));
  EXPECT_EQ(Eigen::VectorXd(f.row(1).transpose()), weights({0, 1}));
  EXPECT_EQ(Eigen::VectorXd(f.row(2).transpose()), weights({-1, 0, 1}));
  EXPECT_THROW(parse_f_contrast("faces;;houses", kColumns), std::invalid_argument);
  EXPECT_THROW(parse_f_contrast("faces;", kColumns), std::invalid_argument);

  const NamedContrast named = parse_named_contrast("faces_vs_houses = faces - houses", kColumns);
  EXPECT_EQ(named.name, "faces_vs_houses");
  ASSERT_EQ(named.weights.rows(), 1);
  EXPECT_EQ(Eigen::VectorXd(named.weights.row(0).transpose()), weights({1, -1}));
  EXPECT_EQ(parse_named_contrast("faces - houses", kColumns).name, "faces-houses");
  EXPECT_EQ(parse_named_contrast("effects=faces;houses", kColumns).weights.rows(), 2);
  EXPECT_THROW(parse_named_contrast("=faces", kColumns), std::invalid_argument);
  EXPECT_THROW(parse_named_contrast("x=", kColumns), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
