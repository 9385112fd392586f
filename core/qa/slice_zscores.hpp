// SliceZScores: slice drop-outs and spikes from the per-slice mean intensities (core/qa/slice_means.hpp), volume by
// volume: each slice's mean against the same slice's means in the volumes before it, as a robust z-score
// (median and 1.4826 x MAD of the history: a drop-out or spike in the history does not hide the next one; the spread
// taken no lower than half the median relative spread of all slices, since a MAD of few values can be far below the
// real noise). A slice whose |z| exceeds the threshold is flagged. Host arithmetic on a few numbers a volume: each
// slice's history kept sorted (a value in, the oldest out: O(history) a slice, no sort), its MAD by merging the
// deviations below and above the median from the middle out.
// docs/algorithms/qa.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace rtf {

// The defaults: a MAD from few values is itself noisy, so z has heavier tails than a normal deviate (with 5 to 30
// values of history, |z| > 5 came up a few times in 4,000 slices of clean noise); the artefacts sought are far larger
// (a drop-out or spike moves a slice's mean by many times its noise: |z| in the hundreds in tests/qa/).
struct SliceZScoreOptions {
  int history = 60;      // volumes before the current one each slice is compared with (the most recent ones)
  int min_history = 10;  // fewer volumes before it: z undefined (NaN), nothing flagged
  double threshold = 8;  // |z| above it flags the slice
};

struct SliceZ {
  std::vector<double> z;     // per slice; NaN without enough history or where the slice has no voxel
  int worst_slice = -1;      // the slice of the largest |z| (-1: none defined)
  double worst_z = 0.0;      // its z (signed: negative for a drop-out, positive for a spike)
  std::vector<int> flagged;  // slices with |z| > threshold, in order
};

class SliceZScores {
 public:
  // Throws std::invalid_argument for history < 2, min_history outside [2, history] or a threshold not > 0.
  explicit SliceZScores(const SliceZScoreOptions& options = {});

  // The z-scores of one volume's slice means (NaN: a slice with no voxel), then that volume joins the history.
  SliceZ next(const std::vector<double>& slice_means);

 private:
  // The sorted histories again from history_ (when the number of slices changes).
  void rebuild(size_t slices);

  SliceZScoreOptions options_;
  std::deque<std::vector<double>> history_;  // the most recent volumes' slice means, oldest first
  std::vector<std::vector<double>> sorted_;  // per slice: the finite values of history_, ascending
};

}  // namespace rtf
