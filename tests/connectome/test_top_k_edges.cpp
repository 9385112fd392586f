// The density's exact selection of the k largest edges (core/connectome/top_k_edges.hpp) against sorting: values of
// both signs with many ties (quantised), r and |r|, k at the ends and in the middle, one thread and several (the
// ranges' boundaries fall inside tie groups), a bin holding every value; the candidates whole and in pieces (uneven,
// and above the size copied in parallel).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "core/connectome/top_k_edges.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

void expect_as_sorting(const std::vector<Edge>& edges, int64_t k, bool absolute, size_t workers) {
  SCOPED_TRACE(::testing::Message() << "k " << k << (absolute ? " |r|" : " r") << " workers " << workers);
  std::vector<float> values;
  for (const Edge& e : edges) values.push_back(absolute ? std::abs(e.r) : e.r);
  std::sort(values.begin(), values.end(), std::greater<>());
  const float expected = values[static_cast<size_t>(k - 1)];
  std::vector<Edge> kept;
  for (const Edge& e : edges) {
    if ((absolute ? std::abs(e.r) : e.r) >= expected) kept.push_back(e);
  }
  // The same list whole, and in pieces of uneven sizes (one of a single edge, the last the rest).
  EdgePieces pieces;
  size_t at = 0;
  for (size_t size : {size_t{1}, size_t{4096}, size_t{1}, size_t{777}}) {
    const size_t take = std::min(size, edges.size() - at);
    pieces.append(std::span<const Edge>(edges).subspan(at, take), workers);
    at += take;
  }
  pieces.append(std::span<const Edge>(edges).subspan(at), workers);
  ASSERT_EQ(pieces.size(), static_cast<int64_t>(edges.size()));
  for (const TopEdges& top : {top_k_edges(edges, k, absolute, workers), top_k_edges(pieces, k, absolute, workers)}) {
    EXPECT_EQ(top.threshold, expected);
    ASSERT_EQ(top.edges.size(), kept.size());
    for (size_t e = 0; e < kept.size(); ++e) {
      EXPECT_EQ(top.edges[e].i, kept[e].i);
      EXPECT_EQ(top.edges[e].j, kept[e].j);
      EXPECT_EQ(top.edges[e].r, kept[e].r);
    }
  }
}

TEST(TopKEdges, LargePiecesCopiedInParallel) {
  // Pieces above the parallel copy's size (2^20 edges), on 4 threads: the same selection as the whole list.
  std::mt19937 rng(test::test_seed());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<Edge> edges((size_t{1} << 20) + 4099);
  for (size_t e = 0; e < edges.size(); ++e)
    edges[e] = {static_cast<int32_t>(e), static_cast<int32_t>(e + 3), uniform(rng)};
  EdgePieces pieces;
  pieces.append(std::span<const Edge>(edges).first((size_t{1} << 20) + 1), 4);
  pieces.append(std::span<const Edge>(edges).subspan((size_t{1} << 20) + 1), 4);
  const TopEdges whole = top_k_edges(edges, 100000, true, 4), parts = top_k_edges(pieces, 100000, true, 4);
  EXPECT_EQ(whole.threshold, parts.threshold);
  ASSERT_EQ(whole.edges.size(), parts.edges.size());
  EXPECT_EQ(std::memcmp(whole.edges.data(), parts.edges.data(), whole.edges.size() * sizeof(Edge)), 0);
  EXPECT_THROW(top_k_edges(EdgePieces{}, 1, false), std::invalid_argument);
}

TEST(TopKEdges, EqualsSorting) {
  std::mt19937 rng(test::test_seed());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<Edge> edges(20011);
  for (size_t e = 0; e < edges.size(); ++e) {
    const float r = std::round(uniform(rng) * 300.0f) / 300.0f;  // ~33 edges share each value
    edges[e] = {static_cast<int32_t>(e), static_cast<int32_t>(e + 1), r};
  }
  for (const bool absolute : {false, true}) {
    for (const int64_t k : {int64_t{1}, int64_t{7}, int64_t{5000}, int64_t{19999}, int64_t{20011}}) {
      for (const size_t workers : {size_t{1}, size_t{3}}) expect_as_sorting(edges, k, absolute, workers);
    }
  }
  // Values within one histogram bin (the same top 16 bits): the exact search inside it decides.
  for (size_t e = 0; e < edges.size(); ++e) edges[e].r = 0.5f + static_cast<float>(e % 101) * 1e-7f;
  expect_as_sorting(edges, 777, false, 3);
  EXPECT_THROW(top_k_edges(edges, 0, false), std::invalid_argument);
  EXPECT_THROW(top_k_edges(edges, 20012, false), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
