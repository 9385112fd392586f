// SPM's serial orthogonalisation and the hrf basis sets: spm_orth keeps the first column and the span of the
// leading columns, zeroes dependent columns; the basis columns are the HRF and SPM's finite differences, the
// orthogonalised set spans the raw one. Tolerances are relative to the columns' norms (1e-12) unless stated.
// ctest-label: unit
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>

#include "core/design/hrf_basis.hpp"
#include "core/design/spm_orth.hpp"

namespace rtf {
namespace {

// Largest |cos| of the angle between two different columns of `x` (zero columns skipped).
double max_cosine(const Eigen::MatrixXd& x) {
  double worst = 0.0;
  for (Eigen::Index i = 0; i < x.cols(); ++i) {
    for (Eigen::Index j = i + 1; j < x.cols(); ++j) {
      const double ni = x.col(i).norm(), nj = x.col(j).norm();
      if (ni > 0 && nj > 0) worst = std::max(worst, std::abs(x.col(i).dot(x.col(j))) / (ni * nj));
    }
  }
  return worst;
}

// Relative residual of projecting `a`'s columns onto span(b).
double outside_span(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  const Eigen::MatrixXd coef = b.colPivHouseholderQr().solve(a);
  return (a - b * coef).norm() / a.norm();
}

TEST(SpmOrth, SerialGramSchmidtWithoutNormalisation) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd x(37, 5);
  for (Eigen::Index i = 0; i < x.size(); ++i) x(i) = normal(rng);
  x.col(3) = 2.0 * x.col(0) - 0.5 * x.col(2);  // dependent on earlier columns
  const Eigen::MatrixXd o = spm_orth(x);
  EXPECT_EQ(Eigen::VectorXd(o.col(0)), Eigen::VectorXd(x.col(0)));  // first column untouched
  EXPECT_TRUE(o.col(3).isZero(0.0));                                // dependent column zeroed ('pad')
  EXPECT_LT(max_cosine(o), 1e-12);
  for (const Eigen::Index k : {1, 2, 4}) {  // span of the leading columns preserved
    EXPECT_LT(outside_span(x.leftCols(k + 1), o.leftCols(k + 1)), 1e-12) << k;
    // Not normalised: each column is the original minus something orthogonal to the residual.
    EXPECT_NEAR(o.col(k).dot(x.col(k)), o.col(k).squaredNorm(), 1e-10 * o.col(k).squaredNorm());
  }
  Eigen::MatrixXd with_zero = x;
  with_zero.col(1).setZero();
  const Eigen::MatrixXd oz = spm_orth(with_zero);
  EXPECT_TRUE(oz.col(1).isZero(0.0));
  EXPECT_LT(max_cosine(oz), 1e-12);
}

TEST(HrfBasis, RawColumnsAreSpmFiniteDifferences) {
  const double dt = 0.125;
  const Eigen::MatrixXd raw = spm_hrf_basis_raw(dt, HrfDerivatives::kTemporalDispersion);
  ASSERT_EQ(raw.rows(), 257);  // 0 .. 32 s
  ASSERT_EQ(raw.cols(), 3);
  const auto h = spm_hrf(dt);
  SpmHrfParams shifted, wider;
  shifted.onset_s = 1.0;
  wider.response_dispersion = 1.01;
  const auto hs = spm_hrf(dt, shifted), hw = spm_hrf(dt, wider);
  for (Eigen::Index k = 0; k < raw.rows(); ++k) {
    const auto i = static_cast<size_t>(k);
    EXPECT_EQ(raw(k, 0), h[i]);
    EXPECT_NEAR(raw(k, 1), h[i] - hs[i], 1e-15);
    EXPECT_NEAR(raw(k, 2), (h[i] - hw[i]) / 0.01, 1e-13);
  }
  // The 1 s shift: the shifted kernel is zero up to 1 s (exactly 8 samples here, the 9th is t = 1 s).
  for (size_t k = 0; k <= 8; ++k) EXPECT_EQ(hs[k], 0.0) << k;
  EXPECT_EQ(spm_hrf_basis_raw(dt, HrfDerivatives::kNone).cols(), 1);
  EXPECT_EQ(spm_hrf_basis_raw(dt, HrfDerivatives::kTemporal).cols(), 2);
}

TEST(HrfBasis, OrthogonalisedSetSpansTheRawOne) {
  for (const double dt : {0.0625, 0.125, 0.15625}) {
    const Eigen::MatrixXd raw = spm_hrf_basis_raw(dt, HrfDerivatives::kTemporalDispersion);
    const Eigen::MatrixXd bf = spm_hrf_basis(dt, HrfDerivatives::kTemporalDispersion);
    EXPECT_EQ(Eigen::VectorXd(bf.col(0)), Eigen::VectorXd(raw.col(0))) << dt;  // the HRF itself, unit sum
    EXPECT_NEAR(bf.col(0).sum(), 1.0, 1e-12);
    EXPECT_LT(max_cosine(bf), 1e-12) << dt;
    EXPECT_LT(outside_span(raw, bf), 1e-12) << dt;
    EXPECT_GT(bf.col(1).norm(), 0.1 * raw.col(1).norm()) << dt;  // the derivatives are far from the HRF itself
    EXPECT_GT(bf.col(2).norm(), 0.1 * raw.col(2).norm()) << dt;
  }
  EXPECT_THROW(spm_hrf_basis(0.0, HrfDerivatives::kTemporal), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
