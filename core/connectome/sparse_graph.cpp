// Edge list -> symmetric CSR (counting sort by row, then each row sorted by column), graph measures, .npz writing.
#include "core/connectome/sparse_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/io/npz_writer.hpp"

namespace rtf {

SymmetricCsr symmetric_csr(int64_t n, const std::vector<Edge>& edges) {
  SymmetricCsr g;
  g.n = n;
  g.indptr.assign(static_cast<size_t>(n) + 1, 0);
  for (const Edge& e : edges) {
    if (e.i < 0 || e.j < 0 || e.i >= n || e.j >= n || e.i == e.j) {
      throw std::invalid_argument(fmt::format("edge ({}, {}) outside 0..{} or a self-loop", e.i, e.j, n - 1));
    }
    ++g.indptr[static_cast<size_t>(e.i) + 1];
    ++g.indptr[static_cast<size_t>(e.j) + 1];
  }
  std::partial_sum(g.indptr.begin(), g.indptr.end(), g.indptr.begin());
  g.indices.resize(2 * edges.size());
  g.data.resize(2 * edges.size());
  std::vector<int64_t> next(g.indptr.begin(), g.indptr.end() - 1);
  for (const Edge& e : edges) {
    for (const auto& [from, to] : {std::pair{e.i, e.j}, std::pair{e.j, e.i}}) {
      const auto slot = static_cast<size_t>(next[static_cast<size_t>(from)]++);
      g.indices[slot] = to;
      g.data[slot] = e.r;
    }
  }
  std::vector<std::pair<int32_t, float>> row;
  for (int64_t i = 0; i < n; ++i) {
    const auto begin = static_cast<size_t>(g.indptr[static_cast<size_t>(i)]);
    const auto end = static_cast<size_t>(g.indptr[static_cast<size_t>(i) + 1]);
    row.clear();
    for (size_t k = begin; k < end; ++k) row.emplace_back(g.indices[k], g.data[k]);
    std::sort(row.begin(), row.end());
    for (size_t k = begin; k < end; ++k) std::tie(g.indices[k], g.data[k]) = row[k - begin];
  }
  return g;
}

std::vector<int64_t> degree(const SymmetricCsr& g) {
  std::vector<int64_t> d(static_cast<size_t>(g.n));
  for (size_t i = 0; i < d.size(); ++i) d[i] = g.indptr[i + 1] - g.indptr[i];
  return d;
}

std::vector<double> strength(const SymmetricCsr& g) {
  std::vector<double> s(static_cast<size_t>(g.n), 0.0);
  for (size_t i = 0; i < s.size(); ++i) {
    for (auto k = static_cast<size_t>(g.indptr[i]); k < static_cast<size_t>(g.indptr[i + 1]); ++k) s[i] += g.data[k];
  }
  return s;
}

void write_csr_npz(const std::filesystem::path& path, const SymmetricCsr& g) {
  using io::npy_member;
  std::vector<io::NpyMember> members;
  const auto nnz = static_cast<int64_t>(g.indices.size());
  if (nnz < std::numeric_limits<int32_t>::max()) {
    const std::vector<int32_t> indptr(g.indptr.begin(), g.indptr.end());
    members.push_back(npy_member<int32_t>("indices", "<i4", {nnz}, g.indices));
    members.push_back(npy_member<int32_t>("indptr", "<i4", {g.n + 1}, indptr));
  } else {
    const std::vector<int64_t> indices(g.indices.begin(), g.indices.end());
    members.push_back(npy_member<int64_t>("indices", "<i8", {nnz}, indices));
    members.push_back(npy_member<int64_t>("indptr", "<i8", {g.n + 1}, g.indptr));
  }
  const std::string format = "csr";
  members.push_back({"format", "|S3", {}, std::vector<uint8_t>(format.begin(), format.end())});
  const std::vector<int64_t> shape{g.n, g.n};
  members.push_back(npy_member<int64_t>("shape", "<i8", {2}, shape));
  members.push_back(npy_member<float>("data", "<f4", {nnz}, g.data));
  io::write_npz(path, members);
}

}  // namespace rtf
