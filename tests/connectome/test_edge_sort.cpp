// ctest-label: unit
// sort_edges (counting sort by row over threads, then rows by column) gives std::sort's order on fresh random edges
// for 1, 3 and 8 threads: rows dense and sparse, one row, unsorted input of 300,000 edges, empty and single lists;
// and through a scratch buffer kept between calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/connectome/edge_sort.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

std::vector<Edge> random_edges(std::mt19937_64& rng, size_t n, int32_t first_row, int32_t rows, int32_t nodes) {
  std::set<std::pair<int32_t, int32_t>> seen;
  std::vector<Edge> edges;
  std::uniform_int_distribution<int32_t> row(first_row, first_row + rows - 1);
  std::uniform_real_distribution<float> r(-1.0f, 1.0f);
  while (edges.size() < n) {
    const int32_t i = row(rng);
    if (i + 1 >= nodes) continue;
    const int32_t j = std::uniform_int_distribution<int32_t>(i + 1, nodes - 1)(rng);
    if (seen.emplace(i, j).second) edges.push_back({i, j, r(rng)});
  }
  return edges;
}

void expect_sorted_like_std(std::vector<Edge> edges, size_t workers) {
  std::vector<Edge> expected = edges;
  std::sort(expected.begin(), expected.end(),
            [](const Edge& a, const Edge& b) { return a.i != b.i ? a.i < b.i : a.j < b.j; });
  sort_edges(edges, workers);
  ASSERT_EQ(edges.size(), expected.size());
  for (size_t k = 0; k < edges.size(); ++k) {
    ASSERT_TRUE(edges[k].i == expected[k].i && edges[k].j == expected[k].j && edges[k].r == expected[k].r)
        << "edge " << k << " of " << edges.size() << ", " << workers << " thread(s)";
  }
}

TEST(EdgeSort, EqualsStdSort) {
  std::mt19937_64 rng(test::test_seed());
  for (size_t workers : {size_t{1}, size_t{3}, size_t{8}}) {
    expect_sorted_like_std(random_edges(rng, 300000, 1000, 2000, 200000), workers);  // dense rows, offset
    expect_sorted_like_std(random_edges(rng, 200000, 5, 1, 1000000), workers);       // one row
    expect_sorted_like_std(random_edges(rng, 5000, 0, 900000, 1000000), workers);    // rows >> edges
    expect_sorted_like_std({}, workers);
    expect_sorted_like_std({{3, 9, 0.5f}}, workers);
  }
  // A scratch buffer kept between calls (larger, then smaller lists) gives the same order.
  std::vector<Edge> scratch;
  for (size_t n : {size_t{250000}, size_t{40000}, size_t{90000}}) {
    std::vector<Edge> edges = random_edges(rng, n, 0, 3000, 100000), expected = edges;
    sort_edges(expected, 1);
    sort_edges(edges, 4, &scratch);
    ASSERT_EQ(edges.size(), expected.size());
    for (size_t k = 0; k < n; ++k) ASSERT_TRUE(edges[k].i == expected[k].i && edges[k].j == expected[k].j) << k;
  }
}

}  // namespace
}  // namespace rtf
