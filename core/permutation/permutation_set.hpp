// The permutations (or sign flips) of a permutation test, as FSL randomise draws them: the identity first (the
// observed statistic belongs to its own null distribution), then either every distinct rearrangement when there are no
// more of them than requested (exhaustive enumeration) or random ones from a seeded generator. Permutations move
// subjects only within their exchangeability block (design.grp); rearrangements that swap subjects with identical
// design rows give the same statistic, so the distinct ones are counted (and enumerated) over the rows' classes.
// The generator is our own (splitmix64 with unbiased bounded draws), so a seed gives the same set on every machine
// and device. docs/algorithms/randomise.md.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace rtf {

enum class PermutationKind { kPermute, kSignFlip };

struct PermutationSet {
  PermutationKind kind = PermutationKind::kPermute;
  int n = 0;                // subjects
  int count = 0;            // rearrangements, the identity first
  bool exhaustive = false;  // all distinct ones enumerated
  double distinct = 0.0;    // how many distinct ones exist (may be huge: a double)
  // kPermute: order[k * n + i] = the subject whose residual goes to row i in rearrangement k (y*_i = e_order[i]).
  std::vector<int32_t> order;
  // kSignFlip: signs[k * n + i] = +1 or -1.
  std::vector<int8_t> signs;
};

// `requested` rearrangements (randomise's -n), or all distinct ones when there are no more than that. `blocks`: one
// exchangeability block id per subject (empty: one block); `rows`: the design (n x p) whose identical rows define the
// classes whose swaps change nothing. Sign flips ignore `rows` (2^n distinct) and refuse blocks. Throws
// std::invalid_argument for requested < 1, a blocks vector of the wrong length, or blocks with sign flips.
PermutationSet make_permutation_set(PermutationKind kind, int n, int requested, uint64_t seed,
                                    const std::vector<int>& blocks = {}, const Eigen::MatrixXd* rows = nullptr);

// The coefficients of the residuals e in the rearranged projection v' P e, for v (n): w[j] multiplies e_j.
template <typename Real>
void rearranged_weights(const PermutationSet& set, int k, const Eigen::VectorXd& v, Real* w) {
  const size_t base = static_cast<size_t>(k) * static_cast<size_t>(set.n);
  if (set.kind == PermutationKind::kSignFlip) {
    for (int j = 0; j < set.n; ++j) w[j] = static_cast<Real>(v[j] * set.signs[base + static_cast<size_t>(j)]);
    return;
  }
  // v' P e = sum_i v_i e_order[i]: e_j's coefficient is v_i where order[i] = j.
  for (int i = 0; i < set.n; ++i) w[set.order[base + static_cast<size_t>(i)]] = static_cast<Real>(v[i]);
}

}  // namespace rtf
