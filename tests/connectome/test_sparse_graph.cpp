// ctest-label: unit
// The connectome's symmetric CSR (core/connectome/sparse_graph.hpp) against a serial reference written here (every
// (row, column, r) triple of both directions, sorted): fresh random edges sorted by (i, j) and shuffled, graphs with
// isolated nodes, one edge, no edge, no node; 1, 2, 3 and 7 threads give the same graph; degree and strength; invalid
// edges name the first bad one in the list. write_csr_npz read back by numpy and scipy.sparse.load_npz (where
// /usr/bin/python3 has scipy): int32 and forced int64 layouts, plain and forced zip64, written in small blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/connectome/sparse_graph.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

struct ReferenceCsr {
  std::vector<int64_t> indptr;
  std::vector<int32_t> indices;
  std::vector<float> data;
};

ReferenceCsr reference_csr(int64_t n, const std::vector<Edge>& edges) {
  std::vector<std::tuple<int32_t, int32_t, float>> triples;
  for (const Edge& e : edges) {
    triples.emplace_back(e.i, e.j, e.r);
    triples.emplace_back(e.j, e.i, e.r);
  }
  std::sort(triples.begin(), triples.end());
  ReferenceCsr ref;
  ref.indptr.assign(static_cast<size_t>(n) + 1, 0);
  for (const auto& [row, column, r] : triples) {
    ++ref.indptr[static_cast<size_t>(row) + 1];
    ref.indices.push_back(column);
    ref.data.push_back(r);
  }
  for (size_t k = 1; k < ref.indptr.size(); ++k) ref.indptr[k] += ref.indptr[k - 1];
  return ref;
}

// Each pair (i < j) of nodes that are not isolated with probability p, r a multiple of 1/64 in [-1, 1] (ties across
// rows), sorted by (i, j).
std::vector<Edge> random_edges(int64_t n, double p, int32_t isolated_every, std::mt19937& rng) {
  std::bernoulli_distribution keep(p);
  std::uniform_int_distribution<int> r(-64, 64);
  std::vector<Edge> edges;
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = i + 1; j < n; ++j) {
      if (isolated_every > 0 && (i % isolated_every == 0 || j % isolated_every == 0)) continue;
      if (keep(rng)) edges.push_back({i, j, static_cast<float>(r(rng)) / 64.0f});
    }
  }
  return edges;
}

void expect_as_reference(int64_t n, const std::vector<Edge>& edges, size_t workers) {
  SCOPED_TRACE(::testing::Message() << "n " << n << ", " << edges.size() << " edges, " << workers << " workers");
  const ReferenceCsr ref = reference_csr(n, edges);
  const SymmetricCsr g = symmetric_csr(n, edges, workers);
  EXPECT_EQ(g.n, n);
  EXPECT_EQ(g.edges(), static_cast<int64_t>(edges.size()));
  EXPECT_EQ(g.indptr, ref.indptr);
  EXPECT_EQ(g.indices, ref.indices);
  EXPECT_EQ(g.data, ref.data);
  std::vector<int64_t> ref_degree(static_cast<size_t>(n));
  std::vector<double> ref_strength(static_cast<size_t>(n), 0.0);
  for (size_t i = 0; i < ref_degree.size(); ++i) {
    ref_degree[i] = ref.indptr[i + 1] - ref.indptr[i];
    for (auto k = ref.indptr[i]; k < ref.indptr[i + 1]; ++k) ref_strength[i] += ref.data[static_cast<size_t>(k)];
  }
  EXPECT_EQ(degree(g, workers), ref_degree);
  EXPECT_EQ(strength(g, workers), ref_strength);  // the same sums in the same order
}

TEST(SparseGraph, SymmetricCsrAsSortingSortedAndShuffledEdges) {
  std::mt19937 rng(test::test_seed());
  for (const auto& [n, p, isolated_every] :
       {std::tuple{100, 0.3, 0}, std::tuple{120, 0.5, 7}, std::tuple{40, 0.15, 3}, std::tuple{300, 0.02, 0}}) {
    std::vector<Edge> edges = random_edges(n, p, isolated_every, rng);
    ASSERT_GT(edges.size(), 10U);
    for (size_t workers : {1, 2, 3, 7}) expect_as_reference(n, edges, workers);
    std::shuffle(edges.begin(), edges.end(), rng);
    for (size_t workers : {1, 3, 7}) expect_as_reference(n, edges, workers);
    // Both directions given as (j, i) in part: rows still come out ascending.
    for (size_t k = 0; k < edges.size(); k += 3) std::swap(edges[k].i, edges[k].j);
    expect_as_reference(n, edges, 3);
  }
}

TEST(SparseGraph, SmallGraphs) {
  expect_as_reference(2, {{0, 1, 0.5f}}, 1);
  expect_as_reference(5, {{3, 1, -0.25f}}, 2);  // one edge, nodes 0, 2 and 4 isolated
  expect_as_reference(4, {}, 3);                // no edge
  expect_as_reference(0, {}, 2);                // no node
  const SymmetricCsr one = symmetric_csr(5, std::vector<Edge>{{1, 3, 0.75f}});
  EXPECT_EQ(one.indptr, (std::vector<int64_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(one.indices, (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(one.data, (std::vector<float>{0.75f, 0.75f}));
}

TEST(SparseGraph, InvalidEdgesNameTheFirst) {
  EXPECT_THROW(symmetric_csr(6, std::vector<Edge>{{1, 1, 0.5f}}), std::invalid_argument);
  EXPECT_THROW(symmetric_csr(6, std::vector<Edge>{{1, 6, 0.5f}}), std::invalid_argument);
  EXPECT_THROW(symmetric_csr(6, std::vector<Edge>{{-1, 2, 0.5f}}), std::invalid_argument);
  EXPECT_THROW(symmetric_csr(0, std::vector<Edge>{{0, 1, 0.5f}}), std::invalid_argument);
  std::mt19937 rng(test::test_seed());
  std::vector<Edge> edges = random_edges(60, 0.8, 0, rng);
  ASSERT_GT(edges.size(), 1000U);
  edges[1000] = {9, 60, 0.5f};
  edges[999] = {4, 4, 0.5f};
  edges.back() = {-3, 2, 0.5f};
  for (size_t workers : {1, 4}) {
    try {
      symmetric_csr(60, edges, workers);
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("edge 999 (4, 4)"), std::string::npos) << e.what();
    }
  }
}

// numpy's dtypes of indices and indptr (scipy's csr_matrix narrows them on loading), then scipy's matrix against the
// reference's triples.
TEST(SparseGraph, CsrNpzLoadsInScipy) {
  if (std::system("/usr/bin/python3 -c 'import scipy.sparse' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with scipy is missing (scripts/setup.sh installs python3-scipy)";
  }
  std::mt19937 rng(test::test_seed());
  const test::TempDir dir;
  for (const auto& [n, p] : {std::pair{70, 0.2}, std::pair{5, 0.0}}) {
    const std::vector<Edge> edges = random_edges(n, p, 4, rng);
    const SymmetricCsr g = symmetric_csr(n, edges, 3);
    const auto triples = dir / "triples.txt";
    {
      std::ofstream out(triples);
      out << std::setprecision(9);
      const ReferenceCsr ref = reference_csr(n, edges);
      for (int64_t row = 0; row < n; ++row) {
        for (auto k = static_cast<size_t>(ref.indptr[static_cast<size_t>(row)]);
             k < static_cast<size_t>(ref.indptr[static_cast<size_t>(row) + 1]); ++k) {
          out << row << ' ' << ref.indices[k] << ' ' << ref.data[k] << '\n';
        }
      }
    }
    for (const bool int64 : {false, true}) {
      for (const bool zip64 : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n " << n << (int64 ? " int64" : " int32") << (zip64 ? " zip64" : ""));
        const auto path = dir / "edges.npz";
        write_csr_npz(path, g, int64, {.force_zip64 = zip64, .block_bytes = 64, .workers = 3});
        EXPECT_FALSE(std::filesystem::exists(path.string() + ".partial"));
        const std::string check =
            "/usr/bin/python3 -c \"import sys, warnings, numpy as np, scipy.sparse as sp\n"
            "warnings.simplefilter('ignore')  # loadtxt on the graph without edges\n"
            "path, triples, n, want = sys.argv[1], sys.argv[2], int(sys.argv[3]), np.dtype(sys.argv[4])\n"
            "d = np.load(path)\n"
            "assert sorted(d.files) == ['data', 'format', 'indices', 'indptr', 'shape'], d.files\n"
            "assert d['indices'].dtype == want and d['indptr'].dtype == want and d['data'].dtype == np.float32\n"
            "m = sp.load_npz(path)\n"
            "t = np.loadtxt(triples, ndmin=2).reshape(-1, 3)\n"
            "ref = sp.coo_matrix((t[:, 2].astype(np.float32), (t[:, 0].astype(int), t[:, 1].astype(int))), "
            "shape=(n, n)).tocsr()\n"
            "assert m.format == 'csr' and m.shape == (n, n) and m.has_sorted_indices\n"
            "assert np.array_equal(m.indptr, ref.indptr) and np.array_equal(m.indices, ref.indices)\n"
            "assert np.array_equal(m.data, ref.data)\n"
            "assert (m != m.T).nnz == 0\" " +
            path.string() + " " + triples.string() + " " + std::to_string(n) + (int64 ? " int64" : " int32");
        EXPECT_EQ(std::system(check.c_str()), 0) << check;
      }
    }
  }
}

}  // namespace
}  // namespace rtf
