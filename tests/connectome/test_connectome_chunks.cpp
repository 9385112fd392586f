// ctest-label: gpu
// The connectome split into chunks of 128-node tile rows (core/connectome/connectome_chunks.hpp: how `rtfmri
// connectome` spreads over devices and ranks): balanced row bounds cover the triangle once with even tile counts; on
// fresh random data with an odd node count (389: 4 tile rows, the last partial) the edges of row ranges, each run on
// one of two PoCL sub-devices, concatenated in row order, equal the whole run's sorted edges bit for bit (i, j and
// r), for Pearson (one block, and blocks of 128 nodes under a small memory budget) and Kendall's tau-b with ties (one
// band, and several bands per range); a density through the chunks equals the whole's; spread_correlations over two
// devices equals the whole, and a run again over its chunk folder restores every chunk. Edge payloads round-trip.
// Resident series: one-tile-row chunks alternating over the two sub-devices, each with its own ResidentSeries /
// ResidentKendall, upload the series once per device (and make Pearson's work buffers once) and still equal the whole
// (computed without one) bit for bit;
// over blocks (small budget) nothing is held; a state holding another series or device is refused; a
// spread_correlations pass (Pearson and Kendall) uploads once per device that ran a chunk, none when all restored;
// a device's work buffers are made once for its chunks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include "core/connectome/connectome_chunks.hpp"
#include "core/connectome/density_threshold.hpp"
#include "core/connectome/kendall.hpp"
#include "core/scale/device_list.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

constexpr int kNodes = 389;

bool same_edges(std::span<const Edge> a, std::span<const Edge> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(Edge)) == 0);
}

template <typename Edges>
void sort_by_pair(Edges& edges) {
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) {
    return std::pair{x.i, x.j} < std::pair{y.i, y.j};
  });
}

// Two PoCL sub-devices (the CPU device split in two), opened once.
std::vector<std::unique_ptr<Device>>& two_devices() {
  static std::vector<std::unique_ptr<Device>> devices = open_devices("cpu/2");
  return devices;
}

// Series sharing a common signal (many edges), integers in 0..5 (many ties) when asked; node 7 constant.
NodeSeries random_series(std::mt19937& rng, int l, bool integers, bool normalise) {
  ImageHeader h;
  h.dims = {kNodes, 1, 1};
  h.num_volumes = l;
  Image image(h);
  std::normal_distribution<double> normal;
  std::vector<double> shared(static_cast<size_t>(l));
  for (double& s : shared) s = normal(rng);
  for (int v = 0; v < kNodes; ++v) {
    const double w = normal(rng);
    for (int t = 0; t < l; ++t) {
      double x = 10.0 + w * shared[static_cast<size_t>(t)] + 0.9 * normal(rng);
      if (integers) x = std::clamp(std::round(x - 7.0), 0.0, 5.0);
      image.volume(t)[static_cast<size_t>(v)] = static_cast<float>(v == 7 ? 1.0 : x);
    }
  }
  NodeSeries series =
      node_series(image, std::vector<uint8_t>(kNodes, 1), CorrelationMethod::kPearson, /*normalise=*/normalise);
  if (!normalise) mark_constant_series(series);
  return series;
}

using RowsRun = std::function<void(Device&, TileRows, const EdgeSink&)>;

std::vector<Edge> collect(Device& device, const RowsRun& run, TileRows rows) {
  std::vector<Edge> edges;
  run(device, rows, [&](std::span<const Edge> found) { edges.insert(edges.end(), found.begin(), found.end()); });
  return edges;
}

// The whole on sub-device 0 against ranges [bounds[c], bounds[c+1]) on sub-devices c % 2, two at a time (threads).
void expect_chunks_equal_whole(const RowsRun& run, const std::vector<int64_t>& bounds) {
  auto& devices = two_devices();
  ASSERT_EQ(devices.size(), 2u);
  std::vector<Edge> whole = collect(*devices[0], run, {});
  sort_by_pair(whole);
  ASSERT_GT(whole.size(), 1000u);
  const size_t chunks = bounds.size() - 1;
  std::vector<ChunkBytes> payloads(chunks);
  for (size_t c0 = 0; c0 < chunks; c0 += 2) {
    std::vector<std::thread> threads;
    for (size_t c = c0; c < std::min(chunks, c0 + 2); ++c) {
      threads.emplace_back([&, c] {
        payloads[c] = edges_to_bytes(collect(*devices[c % 2], run, {.first = bounds[c], .end = bounds[c + 1]}));
      });
    }
    for (auto& t : threads) t.join();
  }
  std::vector<Edge> merged;
  for (size_t c = 0; c < chunks; ++c) {
    const size_t before = merged.size();
    append_edges(payloads[c], merged);
    for (size_t k = before; k < merged.size(); ++k) {
      ASSERT_GE(merged[k].i, bounds[c] * kTileRowNodes);
      ASSERT_LT(merged[k].i, bounds[c + 1] * kTileRowNodes);
    }
  }
  EXPECT_TRUE(same_edges(merged, whole)) << merged.size() << " edges from the chunks, " << whole.size() << " whole";
}

TEST(ConnectomeChunks, PassChunksTaperAtTheEnd) {
  // From 96 tile rows: 48 chunks of 1/64 of the tiles each, then 48 of 1/192, each within one row's tiles.
  for (int64_t nodes : {96 * 128 - 5, 100000, 1561152}) {
    const int64_t rows = tile_row_count(nodes);
    const auto total = static_cast<double>(tiles_before_row(rows, rows));
    const std::vector<int64_t> b = connectome_chunk_bounds(nodes);
    ASSERT_EQ(b.size(), 97u) << nodes;
    EXPECT_EQ(b.front(), 0);
    EXPECT_EQ(b.back(), rows);
    for (size_t c = 0; c + 1 < b.size(); ++c) {
      ASSERT_LT(b[c], b[c + 1]);
      const auto tiles = static_cast<double>(tiles_before_row(rows, b[c + 1]) - tiles_before_row(rows, b[c]));
      EXPECT_LE(std::abs(tiles - total / (c < 48 ? 64.0 : 192.0)), static_cast<double>(rows))
          << nodes << " nodes, chunk " << c;
    }
  }
  EXPECT_THROW(tile_row_bounds(1000, {}), std::invalid_argument);
}

TEST(ConnectomeChunks, BalancedBoundsCoverTheTriangle) {
  for (int64_t nodes : {1, 127, 128, 389, 5000, 300000}) {
    const int64_t rows = tile_row_count(nodes);
    const int64_t total = tiles_before_row(rows, rows);
    EXPECT_EQ(total, rows * (rows + 1) / 2);
    for (int64_t chunks : {1, 2, 3, 7, 64, 100000}) {
      const std::vector<int64_t> b = balanced_tile_row_bounds(nodes, chunks);
      const int64_t expected = std::min(chunks, rows);
      ASSERT_EQ(static_cast<int64_t>(b.size()), expected + 1) << nodes << " nodes, " << chunks << " chunks";
      EXPECT_EQ(b.front(), 0);
      EXPECT_EQ(b.back(), rows);
      for (int64_t c = 0; c < expected; ++c) {
        ASSERT_LT(b[c], b[c + 1]);
        // Within one row's tiles (the most a whole-row bound can miss by) of an even share.
        const int64_t tiles = tiles_before_row(rows, b[c + 1]) - tiles_before_row(rows, b[c]);
        EXPECT_LE(std::abs(static_cast<double>(tiles) - static_cast<double>(total) / static_cast<double>(expected)),
                  static_cast<double>(rows))
            << nodes << " nodes, chunk " << c << " of " << expected;
      }
    }
  }
  EXPECT_EQ(connectome_chunk_count(kNodes), 4);
  EXPECT_EQ(connectome_chunk_count(95 * 128), 64);  // 95 tile rows: 64 equal chunks
  EXPECT_EQ(connectome_chunk_count(100000), 96);
  EXPECT_THROW(thresholded_correlations(*two_devices()[0], NodeSeries{}, {}, [](std::span<const Edge>) {}, {}, 0, 0,
                                        {.first = 0, .end = 3}),
               std::invalid_argument);
}

TEST(ConnectomeChunks, EdgePayloadsRoundTripSorted) {
  const std::vector<Edge> edges{{3, 9, 0.5f}, {1, 4, -0.25f}, {3, 4, 0.75f}, {1, 2, 1.0f}};
  const ChunkBytes bytes = edges_to_bytes(edges);
  std::vector<Edge> back;
  append_edges(bytes, back);
  std::vector<Edge> sorted = edges;
  sort_by_pair(sorted);
  EXPECT_TRUE(same_edges(back, sorted));
  ChunkBytes cut(bytes.begin(), bytes.end() - 1);
  EXPECT_THROW(append_edges(cut, back), std::runtime_error);
}

// A chunk's bytes built launch by launch: sorted launches in row order are copied as they come (no sort); a launch
// out of order, one that interleaves with the one before, or an unsorted one makes take() sort the whole; every way
// gives the bytes of the whole list sorted.
TEST(ConnectomeChunks, EdgePayloadSortsOnlyWhenTheLaunchesDoNot) {
  std::mt19937 rng(test::test_seed());
  std::vector<Edge> all;
  std::uniform_real_distribution<float> r(-1.0f, 1.0f);
  for (int i = 0; i < 60; ++i) {
    for (int j = i + 1; j < 60; ++j) {
      if (rng() % 3 == 0) all.push_back({i, j, r(rng)});
    }
  }
  const ChunkBytes expected = edges_to_bytes(all, 3);
  EXPECT_EQ(edges_in_bytes(expected).size(), all.size());
  // Launches of 10 rows each, sorted within; appended in row order, in reverse, and two interleaving halves.
  std::vector<std::vector<Edge>> launches(6);
  for (const Edge& e : all) launches[static_cast<size_t>(e.i / 10)].push_back(e);
  std::vector<Edge> shuffled = all;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  EdgePayload in_order;
  in_order.expect(all.size() / 2);  // grows past its first room
  for (const std::vector<Edge>& l : launches) in_order.append(l, true);
  in_order.append({}, true);  // an empty launch changes nothing
  EXPECT_FALSE(in_order.needs_sort());
  EXPECT_EQ(in_order.size(), all.size());
  EXPECT_TRUE(in_order.take(2) == expected);
  EdgePayload reversed;
  for (auto l = launches.rbegin(); l != launches.rend(); ++l) reversed.append(*l, true);
  EXPECT_TRUE(reversed.needs_sort());
  EXPECT_TRUE(reversed.take(2) == expected);
  // Columns split: each row's pairs with j < 30, then those with j >= 30 (as a launch repeated by columns).
  std::vector<Edge> left, right;
  for (const Edge& e : all) (e.j < 30 ? left : right).push_back(e);
  EdgePayload split;
  split.append(left, true);
  split.append(right, true);
  EXPECT_TRUE(split.needs_sort());
  EXPECT_TRUE(split.take(3) == expected);
  EdgePayload unsorted;
  unsorted.append(shuffled, false);
  EXPECT_TRUE(unsorted.needs_sort());
  EXPECT_TRUE(unsorted.take(1) == expected);
  EdgePayload none;
  const ChunkBytes empty = none.take();
  EXPECT_TRUE(edges_in_bytes(empty).empty());
}

TEST(ConnectomeChunks, PearsonRowRangesEqualTheWhole) {
  std::mt19937 rng(test::test_seed());
  NodeSeries series = random_series(rng, 37, false, false);
  normalise_on_device(*two_devices()[0], series);
  for (const bool absolute : {false, true}) {
    const CorrelationThreshold threshold{.value = 0.15, .absolute = absolute};
    for (const int64_t series_bytes : {int64_t{0}, int64_t{2 * 128 * 48 * 4}}) {  // one block; blocks of 128 nodes
      SCOPED_TRACE(::testing::Message() << "absolute " << absolute << ", series bytes " << series_bytes);
      const RowsRun run = [&](Device& d, TileRows rows, const EdgeSink& sink) {
        thresholded_correlations(d, series, threshold, sink, {}, 0, series_bytes, rows);
      };
      expect_chunks_equal_whole(run, balanced_tile_row_bounds(kNodes, connectome_chunk_count(kNodes)));
      expect_chunks_equal_whole(run, {0, 1, 4});
      expect_chunks_equal_whole(run, {0, 2, 2, 3, 4});  // an empty range too
    }
  }
}

TEST(ConnectomeChunks, KendallRowRangesEqualTheWhole) {
  std::mt19937 rng(test::test_seed());
  const NodeSeries series = random_series(rng, 41, true, false);
  const CorrelationThreshold threshold{.value = 0.12, .absolute = true};
  for (const int64_t band_bytes : {int64_t{2} << 30, int64_t{4} * kNodes * 64}) {  // one band; 64-row bands
    SCOPED_TRACE(::testing::Message() << "band bytes " << band_bytes);
    const RowsRun run = [&](Device& d, TileRows rows, const EdgeSink& sink) {
      kendall_correlations(d, series, threshold, sink, {}, band_bytes, rows);
    };
    expect_chunks_equal_whole(run, balanced_tile_row_bounds(kNodes, connectome_chunk_count(kNodes)));
    expect_chunks_equal_whole(run, {0, 3, 4});
  }
}

TEST(ConnectomeChunks, DensityThroughChunksEqualsTheWhole) {
  std::mt19937 rng(test::test_seed());
  NodeSeries series = random_series(rng, 33, false, false);
  normalise_on_device(*two_devices()[0], series);
  auto& devices = two_devices();
  const std::vector<int64_t> bounds = balanced_tile_row_bounds(kNodes, 3);
  const CorrelationPass whole = [&](const NodeSeries& s, const CorrelationThreshold& t, const EdgeSink& sink,
                                    const TileRowProgress&) { correlation_rows(*devices[0], s, t, {}, sink); };
  const CorrelationPass chunked = [&](const NodeSeries& s, const CorrelationThreshold& t, const EdgeSink& sink,
                                      const TileRowProgress&) {
    const std::vector<int64_t> b = balanced_tile_row_bounds(static_cast<int64_t>(s.nodes()), 3);
    for (size_t c = 0; c + 1 < b.size(); ++c) {
      std::vector<Edge> edges;
      correlation_rows(*devices[c % 2], s, t, {.first = b[c], .end = b[c + 1]},
                       [&](std::span<const Edge> e) { edges.insert(edges.end(), e.begin(), e.end()); });
      sort_by_pair(edges);
      sink(edges);
    }
  };
  // margin 0.2: the first cut falls short, so the pass is repeated.
  DensityEdges a = edges_at_density(whole, series, 0.05, true, 3, {}, 0.2);
  DensityEdges b = edges_at_density(chunked, series, 0.05, true, 3, {}, 0.2);
  EXPECT_GE(a.passes, 2);
  EXPECT_EQ(b.passes, a.passes);
  EXPECT_EQ(a.threshold, b.threshold);
  sort_by_pair(a.edges);
  sort_by_pair(b.edges);
  EXPECT_GE(static_cast<int64_t>(a.edges.size()), a.requested);
  EXPECT_TRUE(same_edges(a.edges, b.edges));
  // The shared decision is the one taken: "enough" after the first pass ends it there.
  const DensityEdges c = edges_at_density(chunked, series, 0.05, true, 3, {}, 0.2, [](bool) { return true; });
  EXPECT_EQ(c.passes, 1);
}

TEST(ConnectomeChunks, SpreadOverTwoDevicesEqualsTheWholeAndRestores) {
  std::mt19937 rng(test::test_seed());
  NodeSeries series = random_series(rng, 35, false, false);
  normalise_on_device(*two_devices()[0], series);
  const CorrelationThreshold threshold{.value = 0.2, .absolute = true};
  std::vector<Edge> whole;
  correlation_rows(*two_devices()[0], series, threshold, {},
                   [&](std::span<const Edge> e) { whole.insert(whole.end(), e.begin(), e.end()); });
  sort_by_pair(whole);
  Workers workers(open_devices("cpu/2"), Ranks::world());
  const test::TempDir dir("connectome-chunks");
  for (const int64_t restored : {0, 4}) {
    std::vector<Edge> spread;
    ChunkJobStats stats;
    spread_correlations(
        workers, series, threshold, [&](std::span<const Edge> e) { spread.insert(spread.end(), e.begin(), e.end()); },
        {.key = series_key(series), .chunk_dir = dir.path() / "chunks", .progress = {}, .stats = &stats});
    EXPECT_EQ(stats.restored, restored);
    EXPECT_TRUE(same_edges(spread, whole)) << spread.size() << " edges spread, " << whole.size() << " whole";
  }
  // Another threshold is another key: nothing restored.
  ChunkJobStats stats;
  spread_correlations(workers, series, {.value = 0.3, .absolute = true}, [](std::span<const Edge>) {},
                      {.key = series_key(series), .chunk_dir = dir.path() / "chunks", .progress = {}, .stats = &stats});
  EXPECT_EQ(stats.restored, 0);
}

// Chunks of one tile row alternating over the two sub-devices, each device with its own state (`run` given it), merged
// in row order: the edges of the whole run without a state.
template <typename State>
std::vector<State> expect_resident_chunks_equal_whole(
    const std::function<void(Device&, TileRows, const EdgeSink&, State*)>& run) {
  auto& devices = two_devices();
  std::vector<Edge> whole;
  run(
      *devices[0], {}, [&](std::span<const Edge> e) { whole.insert(whole.end(), e.begin(), e.end()); }, nullptr);
  sort_by_pair(whole);
  EXPECT_GT(whole.size(), 1000u);
  std::vector<State> states(2);
  std::vector<Edge> merged;
  for (int64_t row = 0; row < tile_row_count(kNodes); ++row) {
    std::vector<Edge> edges;
    run(
        *devices[static_cast<size_t>(row % 2)], {.first = row, .end = row + 1},
        [&](std::span<const Edge> e) { edges.insert(edges.end(), e.begin(), e.end()); },
        &states[static_cast<size_t>(row % 2)]);
    append_edges(edges_to_bytes(std::move(edges)), merged);
  }
  EXPECT_TRUE(same_edges(merged, whole)) << merged.size() << " edges from the chunks, " << whole.size() << " whole";
  return states;
}

TEST(ConnectomeChunks, ResidentSeriesIsUploadedOncePerDevice) {
  std::mt19937 rng(test::test_seed());
  NodeSeries series = random_series(rng, 37, false, false);
  normalise_on_device(*two_devices()[0], series);
  const CorrelationThreshold threshold{.value = 0.15, .absolute = true};
  for (const int64_t series_bytes : {int64_t{0}, int64_t{2 * 128 * 48 * 4}}) {  // one block; blocks of 128 nodes
    SCOPED_TRACE(::testing::Message() << "series bytes " << series_bytes);
    const std::vector<ResidentSeries> states = expect_resident_chunks_equal_whole<ResidentSeries>(
        [&](Device& d, TileRows rows, const EdgeSink& sink, ResidentSeries* held) {
          thresholded_correlations(d, series, threshold, sink, {}, 0, series_bytes, rows, held);
        });
    for (const ResidentSeries& held : states) {
      EXPECT_EQ(held.uploads, series_bytes == 0 ? 1 : 0);
      EXPECT_EQ(held.workspaces, 1);  // the work buffers made by a device's first chunk, reused by its others
    }
  }
  // A state holding one series refuses another series, and another device.
  ResidentSeries held;
  const EdgeSink none = [](std::span<const Edge>) {};
  thresholded_correlations(*two_devices()[0], series, threshold, none, {}, 0, 0, {.first = 0, .end = 1}, &held);
  const NodeSeries copy = series;
  EXPECT_THROW(thresholded_correlations(*two_devices()[0], copy, threshold, none, {}, 0, 0, {}, &held),
               std::invalid_argument);
  EXPECT_THROW(thresholded_correlations(*two_devices()[1], series, threshold, none, {}, 0, 0, {}, &held),
               std::invalid_argument);
  EXPECT_EQ(held.uploads, 1);
}

TEST(ConnectomeChunks, ResidentKendallIsUploadedOncePerDevice) {
  std::mt19937 rng(test::test_seed());
  const NodeSeries series = random_series(rng, 41, true, false);
  const CorrelationThreshold threshold{.value = 0.12, .absolute = true};
  for (const int64_t band_bytes : {int64_t{2} << 30, int64_t{4} * kNodes * 64}) {  // one band; 64-row bands
    SCOPED_TRACE(::testing::Message() << "band bytes " << band_bytes);
    const std::vector<ResidentKendall> states = expect_resident_chunks_equal_whole<ResidentKendall>(
        [&](Device& d, TileRows rows, const EdgeSink& sink, ResidentKendall* held) {
          kendall_correlations(d, series, threshold, sink, {}, band_bytes, rows, held);
        });
    for (const ResidentKendall& held : states) EXPECT_EQ(held.uploads, 1);
  }
  ResidentKendall held;
  const EdgeSink none = [](std::span<const Edge>) {};
  kendall_correlations(*two_devices()[0], series, threshold, none, {}, int64_t{2} << 30, {.first = 3, .end = 4}, &held);
  const NodeSeries copy = series;
  EXPECT_THROW(kendall_correlations(*two_devices()[0], copy, threshold, none, {}, int64_t{2} << 30, {}, &held),
               std::invalid_argument);
  EXPECT_THROW(kendall_correlations(*two_devices()[1], series, threshold, none, {}, int64_t{2} << 30, {}, &held),
               std::invalid_argument);
  EXPECT_EQ(held.uploads, 1);
}

TEST(ConnectomeChunks, SpreadPassUploadsTheSeriesOncePerDevice) {
  std::mt19937 rng(test::test_seed());
  NodeSeries pearson = random_series(rng, 35, false, false);
  normalise_on_device(*two_devices()[0], pearson);
  const NodeSeries kendall = random_series(rng, 35, true, false);
  Workers workers(open_devices("cpu/2"), Ranks::world());
  const test::TempDir dir("connectome-uploads");
  for (const NodeSeries* series : std::vector<const NodeSeries*>{&pearson, &kendall}) {
    SCOPED_TRACE(series->normalised ? "Pearson" : "Kendall");
    const CorrelationThreshold threshold{.value = 0.2, .absolute = true};
    std::vector<Edge> whole;
    correlation_rows(*two_devices()[0], *series, threshold, {},
                     [&](std::span<const Edge> e) { whole.insert(whole.end(), e.begin(), e.end()); });
    sort_by_pair(whole);
    const std::filesystem::path chunks = dir.path() / (series->normalised ? "pearson" : "kendall");
    for (const bool restored : {false, true}) {
      std::vector<Edge> spread;
      ChunkJobStats stats;
      int64_t uploads = -1;
      spread_correlations(workers, *series, threshold,
                          [&](std::span<const Edge> e) { spread.insert(spread.end(), e.begin(), e.end()); },
                          {.key = series_key(*series),
                           .chunk_dir = chunks,
                           .progress = {},
                           .stats = &stats,
                           .series_uploads = &uploads});
      EXPECT_TRUE(same_edges(spread, whole)) << spread.size() << " edges spread, " << whole.size() << " whole";
      // 4 chunks computed (none when restored) by at most 2 devices: one upload per device that computed any.
      int64_t computed = 0, devices_used = 0;
      for (const int64_t c : stats.device_chunks) {
        computed += c;
        devices_used += c > 0 ? 1 : 0;
      }
      EXPECT_EQ(computed, restored ? 0 : 4);
      EXPECT_EQ(uploads, devices_used);
      EXPECT_LE(uploads, 2);
    }
  }
}

}  // namespace
}  // namespace rtf
