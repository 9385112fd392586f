// Edge list -> symmetric CSR on the host's threads: a stable counting sort by row (per-thread counts over contiguous
// ranges of the list, offsets per (row, thread)), which leaves every row's columns ascending for edges sorted by
// (i, j); a row found out of order (edges in another order) is sorted alone. Graph measures; .npz writing.
#include "core/connectome/sparse_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/util/bucket_slots.hpp"
#include "core/util/host_threads.hpp"
#include "core/util/huge_pages.hpp"

namespace rtf {
namespace {

// f(first_row, end_row) for `workers` ranges of rows holding about equal numbers of stored values.
template <typename F>
void balanced_rows(const SymmetricCsr& g, size_t workers, F f) {
  const int64_t stored = g.indptr.back();
  host_ranges(workers, workers, [&](size_t, size_t, size_t w) {
    const auto row_at = [&](size_t k) {
      if (k == workers) return g.n;
      const int64_t target = stored * static_cast<int64_t>(k) / static_cast<int64_t>(workers);
      return std::min<int64_t>(g.n, std::lower_bound(g.indptr.begin(), g.indptr.end(), target) - g.indptr.begin());
    };
    f(row_at(w), row_at(w + 1));
  });
}

// Columns ascending (and, for a repeated column, r ascending), as a sort of the (column, r) pairs leaves them.
bool row_in_order(const SymmetricCsr& g, size_t begin, size_t end) {
  for (size_t k = begin + 1; k < end; ++k) {
    if (g.indices[k] < g.indices[k - 1] || (g.indices[k] == g.indices[k - 1] && g.data[k] < g.data[k - 1])) {
      return false;
    }
  }
  return true;
}

void sort_row(SymmetricCsr& g, size_t begin, size_t end, std::vector<std::pair<int32_t, float>>& row) {
  row.clear();
  for (size_t k = begin; k < end; ++k) row.emplace_back(g.indices[k], g.data[k]);
  std::sort(row.begin(), row.end());
  for (size_t k = begin; k < end; ++k) std::tie(g.indices[k], g.data[k]) = row[k - begin];
}

}  // namespace

SymmetricCsr symmetric_csr(int64_t n, std::span<const Edge> edges, size_t workers) {
  if (n < 0) throw std::invalid_argument(fmt::format("symmetric_csr: {} nodes", n));
  const size_t count = edges.size();
  const auto rows = static_cast<size_t>(n);
  // One count array of n per thread: at most one thread per n edges, so that they never outgrow the edge list.
  workers = std::clamp<size_t>(count / std::max<size_t>(rows, 1), 1, workers > 0 ? workers : host_thread_count());
  // Per-thread counts per row (validating the edges); then each (row, thread)'s first slot.
  BucketSlots slots = bucket_slots(count, rows, workers, [&](size_t k, auto&& land) {
    const Edge& e = edges[k];
    if (e.i < 0 || e.j < 0 || e.i >= n || e.j >= n || e.i == e.j) return false;
    land(static_cast<size_t>(e.i));
    land(static_cast<size_t>(e.j));
    return true;
  });
  if (slots.bad < count) {
    const Edge& e = edges[slots.bad];
    throw std::invalid_argument(
        fmt::format("edge {} ({}, {}): a node outside 0..{} or a self-loop", slots.bad, e.i, e.j, n - 1));
  }
  SymmetricCsr g;
  g.n = n;
  g.indptr = std::move(slots.start);
  // The scatter: each thread fills its slots of every row, threads in the list's order, so each row keeps the list's
  // order (row r: the i of edges (i, r), then the j of edges (r, j)).
  g.indices.resize(2 * count);  // unwritten (HostArray): the scatter below writes each value first
  g.data.resize(2 * count);
  advise_huge_pages(g.indices.data(), g.indices.size() * sizeof(int32_t));
  advise_huge_pages(g.data.data(), g.data.size() * sizeof(float));
  host_ranges(count, workers, [&](size_t begin, size_t end, size_t w) {
    std::vector<int64_t>& next = slots.next[w];
    for (size_t k = begin; k < end; ++k) {
      const Edge& e = edges[k];
      const auto to_j = static_cast<size_t>(next[static_cast<size_t>(e.i)]++);
      g.indices[to_j] = e.j;
      g.data[to_j] = e.r;
      const auto to_i = static_cast<size_t>(next[static_cast<size_t>(e.j)]++);
      g.indices[to_i] = e.i;
      g.data[to_i] = e.r;
    }
  });
  slots.next = {};
  balanced_rows(g, workers, [&](int64_t first, int64_t last) {
    std::vector<std::pair<int32_t, float>> row;
    for (auto r = static_cast<size_t>(first); r < static_cast<size_t>(last); ++r) {
      const auto begin = static_cast<size_t>(g.indptr[r]), end = static_cast<size_t>(g.indptr[r + 1]);
      if (!row_in_order(g, begin, end)) sort_row(g, begin, end, row);
    }
  });
  return g;
}

std::vector<int64_t> degree(const SymmetricCsr& g, size_t workers) {
  std::vector<int64_t> d(static_cast<size_t>(g.n));
  host_ranges(d.size(), workers > 0 ? workers : host_thread_count(), [&](size_t begin, size_t end, size_t) {
    for (size_t i = begin; i < end; ++i) d[i] = g.indptr[i + 1] - g.indptr[i];
  });
  return d;
}

std::vector<double> strength(const SymmetricCsr& g, size_t workers) {
  std::vector<double> s(static_cast<size_t>(g.n), 0.0);
  balanced_rows(g, workers > 0 ? workers : host_thread_count(), [&](int64_t first, int64_t last) {
    for (auto i = static_cast<size_t>(first); i < static_cast<size_t>(last); ++i) {
      for (auto k = static_cast<size_t>(g.indptr[i]); k < static_cast<size_t>(g.indptr[i + 1]); ++k) s[i] += g.data[k];
    }
  });
  return s;
}

void write_csr_npz(const std::filesystem::path& path, const SymmetricCsr& g, bool force_int64,
                   const io::NpzWriteOptions& options) {
  const auto nnz = static_cast<int64_t>(g.indices.size());
  const std::span<const int32_t> indices(g.indices);
  const std::span<const int64_t> indptr(g.indptr);
  std::vector<io::NpyMember> members;
  if (!force_int64 && nnz < std::numeric_limits<int32_t>::max()) {
    members.push_back(io::npy_view<int32_t>("indices", "<i4", {nnz}, indices));
    members.push_back(io::npy_converted<int32_t, int64_t>("indptr", "<i4", {g.n + 1}, indptr));
  } else {
    members.push_back(io::npy_converted<int64_t, int32_t>("indices", "<i8", {nnz}, indices));
    members.push_back(io::npy_view<int64_t>("indptr", "<i8", {g.n + 1}, indptr));
  }
  const std::string format = "csr";
  members.push_back(io::npy_member<char>("format", "|S3", {}, format));
  members.push_back(io::npy_member<int64_t>("shape", "<i8", {2}, std::vector<int64_t>{g.n, g.n}));
  members.push_back(io::npy_view<float>("data", "<f4", {nnz}, g.data));
  io::write_npz(path, members, options);
}

}  // namespace rtf
