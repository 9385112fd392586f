// permutation_test: batches of rearrangements over the host's threads, each thread writing its own null entries.
#include "core/decoding/decoding_permutation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <stdexcept>

#include "core/permutation/permutation_set.hpp"
#include "core/util/host_threads.hpp"

namespace rtf {

DecodingPermutations permutation_test(DecoderModel model, const SolverOptions& options, const PreparedFolds& folds,
                                      std::span<const int> labels, int classes, const std::vector<int>& runs,
                                      int permutations, uint64_t seed,
                                      const std::function<void(int64_t, int64_t)>& progress) {
  if (permutations < 2) {
    throw std::invalid_argument(
        fmt::format("--permutations {}: at least 2 (the observed labels count as one)", permutations));
  }
  const auto n = static_cast<int>(labels.size());
  Eigen::MatrixXd rows(n, 1);  // identical labels: swapping them changes nothing
  for (int i = 0; i < n; ++i) rows(i, 0) = labels[static_cast<size_t>(i)];
  const PermutationSet set = make_permutation_set(PermutationKind::kPermute, n, permutations, seed, runs, &rows);
  DecodingPermutations out;
  out.exhaustive = set.exhaustive;
  out.null.assign(static_cast<size_t>(set.count), 0.0);
  const size_t threads = host_thread_count(), batch = threads * 4;
  std::mutex failure_mutex;
  std::exception_ptr failure;
  for (size_t first = 0; first < out.null.size(); first += batch) {
    const size_t count = std::min(batch, out.null.size() - first);
    host_ranges(count, threads, [&](size_t begin, size_t end, size_t) {
      std::vector<int> permuted(static_cast<size_t>(n));
      for (size_t k = first + begin; k < first + end; ++k) {
        // Row i takes the label of sample order[i] (permutation_set.hpp).
        for (int i = 0; i < n; ++i) {
          permuted[static_cast<size_t>(i)] = labels[static_cast<size_t>(set.order[k * static_cast<size_t>(n) + i])];
        }
        try {
          out.null[k] = cross_validated_accuracy(model, options, folds, permuted, classes);
        } catch (...) {
          const std::lock_guard lock(failure_mutex);
          if (!failure) failure = std::current_exception();
        }
      }
    });
    if (failure) std::rethrow_exception(failure);
    if (progress) progress(static_cast<int64_t>(first + count), static_cast<int64_t>(out.null.size()));
  }
  const double observed = out.null.front();
  const auto as_large = std::count_if(out.null.begin(), out.null.end(), [&](double a) { return a >= observed; });
  out.p_value = static_cast<double>(as_large) / static_cast<double>(out.null.size());
  return out;
}

}  // namespace rtf
