// Histogram select of the k-th largest edge value, then a parallel filter; over candidates in pieces.
#include "core/connectome/top_k_edges.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "core/util/host_threads.hpp"
#include "core/util/huge_pages.hpp"

namespace rtf {

namespace {

float value_of(const Edge& e, bool absolute) {
  return absolute ? std::abs(e.r) : e.r;
}

// A float's bits as an unsigned key in the floats' order (negative values flipped).
uint32_t order_key(float x) {
  const auto bits = std::bit_cast<uint32_t>(x);
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

// Copies `count` edges from `from` to `to` on `workers` threads (the destination's pages written by all of them).
void parallel_copy(const Edge* from, Edge* to, size_t count, size_t workers) {
  constexpr size_t kSerial = size_t{1} << 20;
  if (count < kSerial || workers <= 1) {
    if (count > 0) std::memcpy(to, from, count * sizeof(Edge));
    return;
  }
  host_ranges(count, workers, [&](size_t begin, size_t end, size_t) {
    std::memcpy(to + begin, from + begin, (end - begin) * sizeof(Edge));
  });
}

// The candidates as one sequence of spans: global position -> (piece, offset), walked range by range.
class Sequence {
 public:
  explicit Sequence(std::vector<std::span<const Edge>> pieces) : pieces_(std::move(pieces)), starts_{0} {
    for (const auto& p : pieces_) starts_.push_back(starts_.back() + p.size());
  }
  size_t size() const { return starts_.back(); }
  // f(edge) for every edge of [begin, end), in order.
  template <typename F>
  void each(size_t begin, size_t end, F&& f) const {
    auto piece = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin()) - 1;
    for (size_t at = begin; at < end; ++piece) {
      const size_t stop = std::min(end, starts_[piece + 1]);
      const Edge* e = pieces_[piece].data() + (at - starts_[piece]);
      for (size_t k = at; k < stop; ++k) f(*e++);
      at = stop;
    }
  }

 private:
  std::vector<std::span<const Edge>> pieces_;
  std::vector<size_t> starts_;
};

TopEdges select(const Sequence& candidates, int64_t k, bool absolute, size_t workers) {
  const size_t n = candidates.size();
  if (k < 1 || static_cast<size_t>(k) > n) throw std::invalid_argument("top_k_edges: k outside 1 .. candidates");
  workers = workers > 0 ? workers : host_thread_count();
  constexpr size_t kBins = 65536;
  // 1. Histogram of the keys' top 16 bits, per thread, summed.
  std::vector<std::vector<int64_t>> histograms(workers);
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    std::vector<int64_t>& h = histograms[w];
    h.assign(kBins, 0);
    candidates.each(begin, end, [&](const Edge& e) { ++h[order_key(value_of(e, absolute)) >> 16]; });
  });
  std::vector<int64_t> histogram(kBins, 0);
  for (const auto& h : histograms) {
    for (size_t b = 0; b < h.size(); ++b) histogram[b] += h[b];
  }
  // 2. The bin holding the k-th largest, counting down from the top.
  size_t bin = kBins;
  int64_t above = 0;
  while (bin > 0 && above + histogram[bin - 1] < k) above += histogram[--bin];
  --bin;
  const auto need = static_cast<size_t>(k - above);  // the need-th largest within the bin
  // 3. That bin's values, exactly.
  std::vector<std::vector<float>> in_bin(workers);
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    candidates.each(begin, end, [&](const Edge& e) {
      const float v = value_of(e, absolute);
      if ((order_key(v) >> 16) == bin) in_bin[w].push_back(v);
    });
  });
  std::vector<float> values;
  for (const auto& v : in_bin) values.insert(values.end(), v.begin(), v.end());
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(need - 1), values.end(),
                   std::greater<>());
  TopEdges out;
  out.threshold = values[need - 1];
  // 4. Every candidate at or above it, each thread's range at its offset (the output's pages first written there).
  std::vector<size_t> counts(workers, 0);
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    candidates.each(begin, end, [&](const Edge& e) { counts[w] += value_of(e, absolute) >= out.threshold ? 1 : 0; });
  });
  std::vector<size_t> offsets(workers + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), offsets.begin() + 1);
  out.edges.resize(offsets.back());  // unwritten (HostArray)
  advise_huge_pages(out.edges.data(), out.edges.size() * sizeof(Edge));
  host_ranges(n, workers, [&](size_t begin, size_t end, size_t w) {
    Edge* to = out.edges.data() + offsets[w];
    candidates.each(begin, end, [&](const Edge& e) {
      if (value_of(e, absolute) >= out.threshold) *to++ = e;
    });
  });
  return out;
}

}  // namespace

int64_t EdgePieces::size() const {
  int64_t n = 0;
  for (const auto& p : pieces) n += static_cast<int64_t>(p.size());
  return n;
}

void EdgePieces::append(std::span<const Edge> edges, size_t workers) {
  if (edges.empty()) return;
  HostArray<Edge>& piece = pieces.emplace_back();
  piece.resize(edges.size());  // unwritten: the copy writes it first
  advise_huge_pages(piece.data(), piece.size() * sizeof(Edge));
  parallel_copy(edges.data(), piece.data(), edges.size(), workers > 0 ? workers : host_thread_count());
}

TopEdges top_k_edges(const std::vector<Edge>& candidates, int64_t k, bool absolute, size_t workers) {
  return select(Sequence({std::span<const Edge>(candidates)}), k, absolute, workers);
}

TopEdges top_k_edges(const EdgePieces& candidates, int64_t k, bool absolute, size_t workers) {
  std::vector<std::span<const Edge>> spans;
  for (const auto& p : candidates.pieces) spans.emplace_back(p);
  return select(Sequence(std::move(spans)), k, absolute, workers);
}

}  // namespace rtf
