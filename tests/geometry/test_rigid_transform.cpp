// Rigid transforms: parameters <-> 4x4 round trips on random parameters, composition and inverse, known rotations
// (the sign and order convention), the centre, FSL/AFNI orders and framewise displacement.
// ctest-label: unit
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <cmath>
#include <numbers>
#include <random>

#include "core/geometry/rigid_transform.hpp"

namespace rtf {
namespace {

RigidParams random_params(std::mt19937_64& rng, double max_t, double max_r) {
  std::uniform_real_distribution<double> t(-max_t, max_t), r(-max_r, max_r);
  RigidParams p;
  for (int i = 0; i < 3; ++i) {
    p.translation_mm[static_cast<size_t>(i)] = t(rng);
    p.rotation_deg[static_cast<size_t>(i)] = r(rng);
  }
  return p;
}

void expect_params_near(const RigidParams& a, const RigidParams& b, double tol) {
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(a.translation_mm[i], b.translation_mm[i], tol) << "translation " << i;
    EXPECT_NEAR(a.rotation_deg[i], b.rotation_deg[i], tol) << "rotation " << i;
  }
}

Eigen::Vector3d apply(const Eigen::Matrix4d& m, const Eigen::Vector3d& x) {
  return (m * x.homogeneous()).head<3>();
}

class RigidTransform : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(RigidTransform, MatrixParameterRoundTripOnRandomParameters) {
  const Eigen::Vector3d centre(3.5, -17.0, 20.25);
  for (int i = 0; i < 2000; ++i) {
    const RigidParams p = random_params(rng_, 20.0, 89.0);  // ry inside (-90, 90): the angles are unique
    const Eigen::Matrix4d m = rigid_matrix(p, i % 2 ? centre : Eigen::Vector3d::Zero());
    const RigidParams back = rigid_params(m, i % 2 ? centre : Eigen::Vector3d::Zero());
    expect_params_near(back, p, 1e-9);
    if (HasFailure()) FAIL() << "seed " << seed_ << ", case " << i;
  }
}

TEST_F(RigidTransform, MatrixIsRigidAndMatchesTheStatedFormula) {
  const RigidParams p = random_params(rng_, 10.0, 30.0);
  const Eigen::Vector3d c(10.0, -5.0, 2.0);
  const Eigen::Matrix4d m = rigid_matrix(p, c);
  const Eigen::Matrix3d r = m.topLeftCorner<3, 3>();
  EXPECT_LT((r.transpose() * r - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_NEAR(r.determinant(), 1.0, 1e-12);
  EXPECT_EQ(m.row(3), Eigen::RowVector4d(0, 0, 0, 1));
  // x' = R (x - c) + c + t, R = Rz Ry Rx.
  const double k = std::numbers::pi / 180.0;
  const Eigen::Matrix3d expected = (Eigen::AngleAxisd(p.rotation_deg[2] * k, Eigen::Vector3d::UnitZ()) *
                                    Eigen::AngleAxisd(p.rotation_deg[1] * k, Eigen::Vector3d::UnitY()) *
                                    Eigen::AngleAxisd(p.rotation_deg[0] * k, Eigen::Vector3d::UnitX()))
                                       .toRotationMatrix();
  EXPECT_LT((r - expected).cwiseAbs().maxCoeff(), 1e-12) << "seed " << seed_;
  const Eigen::Vector3d x(1.0, 2.0, 3.0);
  const Eigen::Vector3d t(p.translation_mm[0], p.translation_mm[1], p.translation_mm[2]);
  EXPECT_LT((apply(m, x) - (expected * (x - c) + c + t)).norm(), 1e-12);
  // The centre moves by exactly t.
  EXPECT_LT((apply(m, c) - (c + t)).norm(), 1e-12);
}

TEST(RigidTransformKnown, PositiveAnglesAreCounterClockwiseAboutEachAxis) {
  const Eigen::Vector3d ex = Eigen::Vector3d::UnitX(), ey = Eigen::Vector3d::UnitY(), ez = Eigen::Vector3d::UnitZ();
  const auto m = [](double rx, double ry, double rz) { return rigid_matrix({{0, 0, 0}, {rx, ry, rz}}); };
  EXPECT_LT((apply(m(90, 0, 0), ey) - ez).norm(), 1e-12);  // rx: +y -> +z
  EXPECT_LT((apply(m(0, 90, 0), ez) - ex).norm(), 1e-12);  // ry: +z -> +x
  EXPECT_LT((apply(m(0, 0, 90), ex) - ey).norm(), 1e-12);  // rz: +x -> +y
  // Order: x first, then y, then z. rx = 90 takes +y to +z, then rz = 90 leaves +z alone;
  // the other order (z first) would take +y to -x and then rx would leave it at -x.
  EXPECT_LT((apply(m(90, 0, 90), ey) - ez).norm(), 1e-12);
  // ry = 90 then rz = 90: +x -> -z (ry) -> -z (rz).
  EXPECT_LT((apply(m(0, 90, 90), ex) - (-ez)).norm(), 1e-12);
}

TEST(RigidTransformKnown, RotationAboutACentreKeepsTheCentreFixed) {
  const Eigen::Vector3d c(10.0, 20.0, 30.0);
  const Eigen::Matrix4d m = rigid_matrix({{0, 0, 0}, {0, 0, 90}}, c);
  EXPECT_LT((apply(m, c) - c).norm(), 1e-12);
  EXPECT_LT((apply(m, c + Eigen::Vector3d(5, 0, 0)) - (c + Eigen::Vector3d(0, 5, 0))).norm(), 1e-12);
  // The same matrix has other parameters about another centre: same rotation, translation (R - I)(c - c').
  const RigidParams about_origin = rigid_params(m);
  EXPECT_NEAR(about_origin.rotation_deg[2], 90.0, 1e-12);
  EXPECT_NEAR(about_origin.translation_mm[0], 30.0, 1e-9);  // c - R c = (10 + 20, 20 - 10, 0)
  EXPECT_NEAR(about_origin.translation_mm[1], 10.0, 1e-9);
  EXPECT_NEAR(about_origin.translation_mm[2], 0.0, 1e-9);
}

TEST_F(RigidTransform, CompositionAndInverse) {
  const Eigen::Vector3d c(-2.0, 7.0, 11.0);
  for (int i = 0; i < 200; ++i) {
    const RigidParams a = random_params(rng_, 5.0, 20.0), b = random_params(rng_, 5.0, 20.0);
    const RigidParams ab = compose(a, b, c);
    const Eigen::Vector3d x(rng_() % 100 * 0.5, -3.0, 4.0);
    EXPECT_LT((apply(rigid_matrix(ab, c), x) - apply(rigid_matrix(a, c), apply(rigid_matrix(b, c), x))).norm(), 1e-9);
    const RigidParams identity = compose(a, inverse(a, c), c);
    expect_params_near(identity, RigidParams{}, 1e-9);
    expect_params_near(inverse(inverse(a, c), c), a, 1e-9);
    if (HasFailure()) FAIL() << "seed " << seed_ << ", case " << i;
  }
}

TEST(RigidTransformKnown, GimbalLockKeepsTheMatrix) {
  for (double ry : {90.0, -90.0}) {
    const RigidParams p{{1, 2, 3}, {25.0, ry, -40.0}};
    const Eigen::Matrix4d m = rigid_matrix(p);
    const RigidParams back = rigid_params(m);
    EXPECT_NEAR(back.rotation_deg[1], ry, 1e-6);
    EXPECT_LT((rigid_matrix(back) - m).cwiseAbs().maxCoeff(), 1e-9);
  }
}

TEST(RigidTransformKnown, RejectsNonRigidMatrices) {
  Eigen::Matrix4d scaled = Eigen::Matrix4d::Identity();
  scaled(0, 0) = 1.1;
  EXPECT_THROW(rigid_params(scaled), std::invalid_argument);
  Eigen::Matrix4d mirrored = Eigen::Matrix4d::Identity();
  mirrored(0, 0) = -1.0;
  EXPECT_THROW(rigid_params(mirrored), std::invalid_argument);
  Eigen::Matrix4d projective = Eigen::Matrix4d::Identity();
  projective(3, 0) = 0.5;
  EXPECT_THROW(rigid_params(projective), std::invalid_argument);
}

TEST(RigidTransformKnown, FslAndAfniOrders) {
  const RigidParams p{{1.0, -2.0, 3.0}, {10.0, -20.0, 30.0}};
  const double k = std::numbers::pi / 180.0;
  const auto par = to_fsl_par(p);
  EXPECT_NEAR(par[0], 10.0 * k, 1e-15);
  EXPECT_NEAR(par[1], -20.0 * k, 1e-15);
  EXPECT_NEAR(par[2], 30.0 * k, 1e-15);
  EXPECT_EQ(par[3], 1.0);
  EXPECT_EQ(par[4], -2.0);
  EXPECT_EQ(par[5], 3.0);
  expect_params_near(from_fsl_par(par), p, 1e-12);
  const auto afni = to_afni_dfile(p);  // roll (z) pitch (x) yaw (y) dS (+z) dL (-x) dP (-y)
  EXPECT_EQ(afni, (std::array<double, 6>{30.0, 10.0, -20.0, 3.0, -1.0, 2.0}));
  expect_params_near(from_afni_dfile(afni), p, 0.0);
}

TEST(RigidTransformKnown, FramewiseDisplacementIsPowers) {
  const RigidParams a{{0, 0, 0}, {0, 0, 0}};
  const RigidParams b{{0.1, -0.2, 0.3}, {0.0, 0.0, 180.0 / std::numbers::pi * 0.001}};
  EXPECT_NEAR(framewise_displacement(a, b), 0.6 + 50.0 * 0.001, 1e-12);
  EXPECT_NEAR(framewise_displacement(b, a), framewise_displacement(a, b), 1e-15);
}

}  // namespace
}  // namespace rtf
