// Small statistics for the neurofeedback value, in double: median, running mean and variance (Welford), Pearson
// correlation (two-pass) and Fisher's z. docs/algorithms/feedback.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rtf {

// Median of the values (the mean of the two middle ones for an even count); NaN when empty. Takes a copy to sort.
double median(std::vector<double> values);

// Pearson correlation of two equally long series, two-pass (means first); NaN when shorter than 2, of different
// lengths, or when either series has zero variance.
double pearson(std::span<const double> a, std::span<const double> b);

// atanh(r) with r clamped to +-(1 - 1e-12), so a perfect correlation gives a large finite z (about 14.2).
double fisher_z(double r);

// Welford's running mean and variance (no cancellation over long runs).
class RunningMoments {
 public:
  void add(double x);
  int64_t count() const { return n_; }
  double mean() const { return mean_; }
  // Sample standard deviation (n - 1 in the denominator, as Matlab's std); 0 for fewer than 2 values.
  double stddev() const;

 private:
  int64_t n_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;
};

}  // namespace rtf
