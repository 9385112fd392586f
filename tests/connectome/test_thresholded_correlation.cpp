// ctest-label: gpu
// The connectome's correlations on the device (core/connectome/, kernels/correlation_tile.cl) against the double
// reference (core/reference/connectome_reference.hpp) for every pair of small problems on odd sizes (several rows of
// 128-node tiles, a partial last tile): Pearson and Spearman (integer data: many ties), positive and absolute
// thresholds, constant series excluded; the edge set equals the reference's except for pairs within 1e-5 of the
// threshold, and every r is within 1e-5. An edge list far too small for the edges (split launches) still yields every
// pair once. Series over a forced small device budget (blocks of 128 nodes, block pairs; normalisation in chunks)
// give exactly the in-memory edges and series. The symmetric CSR, degree, strength and the .npz archive (members read
// back by our zip reader).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "core/connectome/density_threshold.hpp"
#include "core/connectome/edge_sort.hpp"
#include "core/connectome/node_series.hpp"
#include "core/connectome/sparse_graph.hpp"
#include "core/connectome/thresholded_correlation.hpp"
#include "core/io/npy_file.hpp"
#include "core/io/npz_writer.hpp"
#include "core/io/zip_archive.hpp"
#include "core/reference/connectome_reference.hpp"
#include "tests/connectome/density_expectations.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_device.hpp"
#include "tests/support/test_seed.hpp"

namespace rtf {
namespace {

constexpr double kTolerance = 1e-5;

// N nodes along x (one voxel each), L volumes: smooth shared signals plus noise; `integers` rounds to 0..5 (ties).
Image make_series(int n, int l, std::mt19937& rng, bool integers) {
  ImageHeader h;
  h.dims = {n, 1, 1};
  h.num_volumes = l;
  Image image(h);
  std::normal_distribution<double> normal;
  std::vector<double> shared(static_cast<size_t>(l));
  for (double& s : shared) s = normal(rng);
  for (int v = 0; v < n; ++v) {
    const double w = normal(rng);
    for (int t = 0; t < l; ++t) {
      double x = 100.0 + w * shared[static_cast<size_t>(t)] + 0.8 * normal(rng);
      if (integers) x = std::clamp(std::round(x - 97.0), 0.0, 5.0);
      image.volume(t)[static_cast<size_t>(v)] = static_cast<float>(x);
    }
  }
  return image;
}

Eigen::MatrixXd as_matrix(const Image& image) {
  Eigen::MatrixXd m(image.nx(), image.nt());
  for (int64_t t = 0; t < image.nt(); ++t) {
    for (int64_t v = 0; v < image.nx(); ++v) m(v, t) = image.volume(t)[static_cast<size_t>(v)];
  }
  return m;
}

std::map<std::pair<int, int>, float> collect(const NodeSeries& series, const CorrelationThreshold& threshold,
                                             int64_t max_edges = 0) {
  std::map<std::pair<int, int>, float> found;
  thresholded_correlations(
      test::test_device(), series, threshold,
      [&](std::span<const Edge> edges) {
        EXPECT_TRUE(std::is_sorted(edges.begin(), edges.end(), edge_before)) << "a launch's edges out of (i, j) order";
        for (const Edge& e : edges) {
          EXPECT_LT(e.i, e.j);
          EXPECT_TRUE(found.emplace(std::pair{e.i, e.j}, e.r).second) << "pair " << e.i << "," << e.j << " twice";
        }
      },
      {}, max_edges);
  return found;
}

void check_against_reference(const Image& image, CorrelationMethod method, const CorrelationThreshold& threshold,
                             bool on_device) {
  std::vector<uint8_t> mask(static_cast<size_t>(image.nx()), 1);
  NodeSeries series = node_series(image, mask, method, !on_device);
  normalise_on_device(test::test_device(), series);
  const auto found = collect(series, threshold);
  const Eigen::MatrixXd ref = method == CorrelationMethod::kSpearman ? reference::spearman_matrix(as_matrix(image))
                                                                     : reference::pearson_matrix(as_matrix(image));
  int64_t expected = 0, borderline = 0;
  double worst = 0.0;
  const int n = static_cast<int>(image.nx());
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const double r = ref(i, j);
      const auto it = found.find({i, j});
      if (std::isnan(r)) {
        EXPECT_TRUE(it == found.end()) << "an edge of a constant series " << i << "," << j;
        continue;
      }
      const double metric = threshold.absolute ? std::abs(r) : r;
      const bool keep = metric >= threshold.value;
      expected += keep ? 1 : 0;
      if (it != found.end()) {
        worst = std::max(worst, std::abs(it->second - r));
        EXPECT_NEAR(it->second, r, kTolerance) << "pair " << i << "," << j;
      }
      if (std::abs(metric - threshold.value) <= kTolerance) {
        ++borderline;
        continue;
      }
      EXPECT_EQ(it != found.end(), keep) << "pair " << i << "," << j << ": r " << r;
    }
  }
  std::cout << found.size() << " edges (reference " << expected << ", " << borderline
            << " within the tolerance of the threshold), worst |r - reference| " << worst << "\n";
  EXPECT_GT(expected, 0);
}

TEST(Connectome, AverageRanksMatchCounting) {
  std::mt19937 rng(test::test_seed());
  std::uniform_int_distribution<int> value(0, 6);
  std::vector<double> x(41);
  for (double& v : x) v = value(rng);
  const std::vector<double> ranks = average_ranks(x);
  for (size_t a = 0; a < x.size(); ++a) {
    double smaller = 0, equal = 0;
    for (double y : x) {
      smaller += y < x[a] ? 1 : 0;
      equal += y == x[a] ? 1 : 0;
    }
    EXPECT_DOUBLE_EQ(ranks[a], 1.0 + smaller + (equal - 1.0) / 2.0);
  }
}

TEST(Connectome, PearsonMatchesReference) {
  std::mt19937 rng(test::test_seed());
  Image image = make_series(331, 37, rng, false);
  for (int t = 0; t < 37; ++t) {  // three constant series: excluded
    for (int v : {0, 128, 300}) image.volume(t)[static_cast<size_t>(v)] = 7.0f;
  }
  for (bool on_device : {false, true}) {
    SCOPED_TRACE(on_device ? "normalised on the device" : "normalised on the host");
    check_against_reference(image, CorrelationMethod::kPearson, {.value = 0.3, .absolute = false}, on_device);
    check_against_reference(image, CorrelationMethod::kPearson, {.value = 0.3, .absolute = true}, on_device);
  }
}

TEST(Connectome, SpearmanWithTiesMatchesReference) {
  std::mt19937 rng(test::test_seed());
  const Image image = make_series(131, 29, rng, true);
  for (bool on_device : {false, true}) {
    SCOPED_TRACE(on_device ? "ranked on the device" : "ranked on the host");
    check_against_reference(image, CorrelationMethod::kSpearman, {.value = 0.25, .absolute = true}, on_device);
  }
}

// The device's ranks and normalisation equal the host's (double) within float rounding; constant series are flagged
// alike; series past kMaxDeviceSeriesLength fall back to the host.
TEST(Connectome, DeviceNormalisationEqualsHost) {
  std::mt19937 rng(test::test_seed());
  for (const auto& [n, l, integers] : {std::tuple{67, 53, true}, std::tuple{9, 4100, false}}) {
    Image image = make_series(n, l, rng, integers);
    for (int t = 0; t < l; ++t) image.volume(t)[3] = 5.0f;  // constant
    for (CorrelationMethod method : {CorrelationMethod::kPearson, CorrelationMethod::kSpearman}) {
      const std::vector<uint8_t> mask(static_cast<size_t>(n), 1);
      const NodeSeries host = node_series(image, mask, method, true);
      NodeSeries device = node_series(image, mask, method, false);
      EXPECT_FALSE(device.normalised);
      normalise_on_device(test::test_device(), device);
      EXPECT_TRUE(device.normalised);
      EXPECT_EQ(device.valid, host.valid);
      EXPECT_EQ(host.valid[3], 0);
      double worst = 0.0;
      for (size_t k = 0; k < host.z.size(); ++k) worst = std::max(worst, double(std::abs(device.z[k] - host.z[k])));
      EXPECT_LE(worst, 1e-6) << "L " << l;
    }
  }
  const Image image = make_series(5, 10, rng, false);
  const NodeSeries raw = node_series(image, std::vector<uint8_t>(5, 1), CorrelationMethod::kPearson, false);
  EXPECT_THROW(collect(raw, {.value = 0.5}), std::invalid_argument);  // not normalised
}

// Density thresholds: exactly the k largest pairs of the reference (except pairs within 1e-6 of the cut), the cut
// within 1e-6 of the reference's k-th largest r; a sample estimate that falls short repeats the pass.
TEST(Connectome, DensityKeepsTheLargestPairs) {
  std::mt19937 rng(test::test_seed());
  const Image image = make_series(301, 41, rng, false);
  NodeSeries series = node_series(image, std::vector<uint8_t>(301, 1), CorrelationMethod::kPearson, false);
  normalise_on_device(test::test_device(), series);
  const Eigen::MatrixXd ref = reference::pearson_matrix(as_matrix(image));
  for (const auto& [density, absolute, margin] :
       {std::tuple{0.05, false, 1.5}, std::tuple{0.01, true, 1.5}, std::tuple{0.02, false, 0.1}}) {
    SCOPED_TRACE(::testing::Message() << "density " << density << (absolute ? " |r|" : " r") << " margin " << margin);
    const DensityEdges d = edges_at_density(test::test_device(), series, density, absolute, 7, {}, margin);
    EXPECT_EQ(d.pairs, 301 * 300 / 2);
    EXPECT_EQ(d.requested, std::llround(density * 301 * 300 / 2));
    if (margin < 1.0) {
      EXPECT_GT(d.passes, 1);
    }
    test::expect_k_largest(ref, d, absolute);
  }
  EXPECT_THROW(edges_at_density(test::test_device(), series, 0.0, false), std::invalid_argument);
  EXPECT_THROW(edges_at_density(test::test_device(), series, 1.5, false), std::invalid_argument);
}

TEST(Connectome, TinyEdgeListSplitsLaunchesAndLosesNothing) {
  std::mt19937 rng(test::test_seed());
  const Image image = make_series(150, 20, rng, false);
  const NodeSeries series = node_series(image, std::vector<uint8_t>(150, 1), CorrelationMethod::kPearson);
  // Every pair (11,175) through a list of 9,000: the band splits; the largest tile (the first diagonal one, 8,128
  // pairs) fits.
  const auto found = collect(series, {.value = -1.0, .absolute = false}, 9000);
  EXPECT_EQ(found.size(), 150U * 149U / 2U);
  EXPECT_THROW(collect(series, {.value = -1.0}, 100), std::runtime_error);  // one tile holds more than 100
}

// The edges sorted by pair, from a device budget of `series_bytes` (0: automatic); progress rises monotonically to the
// number of tile rows; each launch's edges come sorted by (i, j), and with the series in one block and no launch split
// (the automatic list and budget) the launches' edges together come sorted.
std::vector<std::tuple<int, int, float>> sorted_edges(const NodeSeries& series, const CorrelationThreshold& threshold,
                                                      int64_t max_edges, int64_t series_bytes) {
  std::vector<std::tuple<int, int, float>> edges;
  int64_t last = 0, total = -1;
  bool calls_in_order = true;
  thresholded_correlations(
      test::test_device(), series, threshold,
      [&](std::span<const Edge> found) {
        EXPECT_TRUE(std::is_sorted(found.begin(), found.end(), edge_before)) << "a launch's edges out of order";
        if (!edges.empty() && !found.empty()) {
          const auto& [i, j, r] = edges.back();
          calls_in_order &= edge_before(Edge{i, j, r}, found.front());
        }
        for (const Edge& e : found) edges.emplace_back(e.i, e.j, e.r);
      },
      [&](int64_t done, int64_t all) {
        EXPECT_GE(done, last);
        EXPECT_LE(done, all);
        last = done;
        total = all;
      },
      max_edges, series_bytes);
  const auto tiles = static_cast<int64_t>((series.nodes() + 127) / 128);
  EXPECT_EQ(total, tiles);
  EXPECT_EQ(last, tiles);
  if (max_edges == 0 && series_bytes == 0) {
    EXPECT_TRUE(calls_in_order);
    EXPECT_TRUE(std::is_sorted(edges.begin(), edges.end()));
  }
  std::sort(edges.begin(), edges.end());
  EXPECT_TRUE(std::adjacent_find(edges.begin(), edges.end(), [](const auto& a, const auto& b) {
                return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b);
              }) == edges.end());
  return edges;
}

// 331 nodes x 37 volumes (padded 48: 63,552 bytes) over a budget of two 128-node blocks (49,152 bytes): three blocks,
// six block pairs, a partial last block; the edges equal the one-buffer run's bit for bit, also with an edge list of
// one tile, and for 600 nodes in 256-node blocks with split launches; normalisation in chunks equals the unchunked one
// exactly.
TEST(Connectome, SeriesOverTheDeviceBudgetTiledInBlocks) {
  std::mt19937 rng(test::test_seed());
  Image image = make_series(331, 37, rng, false);
  for (int t = 0; t < 37; ++t) {  // constant series: excluded, in the first, middle and last block
    for (int v : {0, 200, 330}) image.volume(t)[static_cast<size_t>(v)] = 7.0f;
  }
  const std::vector<uint8_t> mask(331, 1);
  NodeSeries series = node_series(image, mask, CorrelationMethod::kPearson, false);
  ASSERT_EQ(series.padded, 48);
  const int64_t two_blocks = 2 * 128 * 48 * 4;
  NodeSeries chunked = series;
  normalise_on_device(test::test_device(), series);
  normalise_on_device(test::test_device(), chunked, 128 * 48 * 4);  // three chunks
  EXPECT_TRUE(chunked.normalised);
  EXPECT_EQ(chunked.valid, series.valid);
  EXPECT_EQ(chunked.z, series.z);
  for (CorrelationMethod method : {CorrelationMethod::kPearson, CorrelationMethod::kSpearman}) {
    NodeSeries all = node_series(image, mask, method, false), odd = all;
    normalise_on_device(test::test_device(), all);
    normalise_on_device(test::test_device(), odd, 100 * 48 * 4 + 17);  // chunks of 100 nodes
    EXPECT_EQ(odd.z, all.z);
    EXPECT_EQ(odd.valid, all.valid);
  }
  for (const CorrelationThreshold threshold :
       {CorrelationThreshold{.value = 0.3, .absolute = false}, CorrelationThreshold{.value = 0.3, .absolute = true}}) {
    SCOPED_TRACE(threshold.absolute ? "|r| >= 0.3" : "r >= 0.3");
    const auto in_memory = sorted_edges(series, threshold, 0, 0);
    const auto blocked = sorted_edges(series, threshold, 0, two_blocks);
    EXPECT_GT(in_memory.size(), 1000U);
    EXPECT_EQ(blocked, in_memory);
    EXPECT_EQ(sorted_edges(series, threshold, 0, two_blocks + 2 * 48 * 4 * 127), in_memory);  // still 128-node blocks
  }
  // Every pair of valid nodes through a list of one full tile (16,384; with 128-node blocks each launch is one tile).
  const CorrelationThreshold every{.value = -1.0, .absolute = false};
  const auto in_memory = sorted_edges(series, every, 128 * 128, 0);
  EXPECT_EQ(in_memory.size(), 328U * 327U / 2U);
  EXPECT_EQ(sorted_edges(series, every, 128 * 128, two_blocks), in_memory);
  EXPECT_EQ(sorted_edges(series, every, 0, two_blocks), in_memory);
  // 600 nodes x 20 volumes (padded 32) in 256-node blocks (256, 256, 88): a block pair's launch of 2 x 2 tiles
  // overflows a one-tile list and splits its rows, then a row's columns, on and off the diagonal.
  const Image wide = make_series(600, 20, rng, false);
  const NodeSeries wide_series = node_series(wide, std::vector<uint8_t>(600, 1), CorrelationMethod::kPearson);
  const int64_t wide_blocks = 2 * 256 * 32 * 4;
  const auto wide_all = sorted_edges(wide_series, every, 0, 0);
  EXPECT_EQ(wide_all.size(), 600U * 599U / 2U);
  EXPECT_EQ(sorted_edges(wide_series, every, 128 * 128, wide_blocks), wide_all);
  const CorrelationThreshold wide_abs{.value = 0.4, .absolute = true};
  EXPECT_EQ(sorted_edges(wide_series, wide_abs, 0, wide_blocks), sorted_edges(wide_series, wide_abs, 0, 0));
  // A budget below two blocks of 128 nodes cannot tile them; the normalisation's below one node's series.
  EXPECT_THROW(sorted_edges(series, every, 0, two_blocks - 1), std::invalid_argument);
  NodeSeries raw = node_series(image, mask, CorrelationMethod::kPearson, false);
  EXPECT_THROW(normalise_on_device(test::test_device(), raw, 48 * 4 - 1), std::invalid_argument);
}

TEST(Connectome, SymmetricCsrDegreeStrengthAndNpz) {
  const std::vector<Edge> edges{{2, 5, 0.5f}, {0, 2, 0.7f}, {1, 5, -0.4f}, {2, 3, 0.9f}};
  const SymmetricCsr g = symmetric_csr(6, edges);
  EXPECT_EQ(g.edges(), 4);
  EXPECT_EQ(g.indptr, (std::vector<int64_t>{0, 1, 2, 5, 6, 6, 8}));
  EXPECT_EQ(g.indices, (std::vector<int32_t>{2, 5, 0, 3, 5, 2, 1, 2}));
  EXPECT_EQ(g.data, (std::vector<float>{0.7f, -0.4f, 0.7f, 0.9f, 0.5f, 0.9f, -0.4f, 0.5f}));
  EXPECT_EQ(degree(g), (std::vector<int64_t>{1, 1, 3, 1, 0, 2}));
  const std::vector<double> s = strength(g);
  EXPECT_NEAR(s[2], 2.1, 1e-6);
  EXPECT_NEAR(s[5], 0.1, 1e-6);
  EXPECT_THROW(symmetric_csr(6, std::vector<Edge>{{1, 1, 0.5f}}), std::invalid_argument);
  EXPECT_THROW(symmetric_csr(6, std::vector<Edge>{{1, 6, 0.5f}}), std::invalid_argument);

  const test::TempDir dir;
  const auto path = dir.path() / "edges.npz";
  write_csr_npz(path, g);
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".partial"));
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto members = io::read_zip_members(bytes, path.string());
  ASSERT_EQ(members.size(), 5U);
  const auto npy = [](const std::string& name, const std::string& descr, std::vector<int64_t> shape, const auto& v) {
    return io::encode_npy(io::npy_member<typename std::decay_t<decltype(v)>::value_type>(name, descr, shape, v));
  };
  EXPECT_EQ(members.at("indices.npy"), npy("indices", "<i4", {8}, g.indices));
  EXPECT_EQ(members.at("data.npy"), npy("data", "<f4", {8}, g.data));
  EXPECT_EQ(members.at("shape.npy"), npy("shape", "<i8", {2}, std::vector<int64_t>{6, 6}));
  const auto& header = members.at("format.npy");
  const std::string text(header.begin(), header.end());
  EXPECT_EQ(text.substr(1, 5), "NUMPY");
  EXPECT_NE(text.find("'descr': '|S3'"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 3), "csr");
  const size_t header_end = 10 + (static_cast<size_t>(header[8]) | (static_cast<size_t>(header[9]) << 8));
  EXPECT_EQ(header_end % 64, 0U);  // the data start aligned, as NumPy writes them
}

// The zip64 layout (used when an archive could pass 4 GiB) forced on a small archive: Python's zipfile and numpy read
// it (an independent reader; skipped where Debian's python3-numpy is missing).
TEST(Connectome, Zip64ArchiveReadsInNumpy) {
  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy is missing (scripts/setup.sh installs python3-scipy)";
  }
  const test::TempDir dir;
  const auto path = dir.path() / "zip64.npz";
  const std::vector<double> values{1.5, -2.25, 3.0};
  const std::vector<int32_t> counts{7, 8};
  io::write_npz(
      path, {io::npy_member<double>("a", "<f8", {3}, values), io::npy_member<int32_t>("b", "<i4", {2}, counts)}, true);
  const std::string check =
      "/usr/bin/python3 -c \"import numpy as np, zipfile, sys; z = zipfile.ZipFile(sys.argv[1]); "
      "assert all(i.file_size == i.compress_size for i in z.infolist()); d = np.load(sys.argv[1]); "
      "assert list(d['a']) == [1.5, -2.25, 3.0] and list(d['b']) == [7, 8]\" " +
      path.string();
  EXPECT_EQ(std::system(check.c_str()), 0) << check;
  // The same archive without zip64 reads in our own reader too.
  const auto plain = dir.path() / "plain.npz";
  io::write_npz(plain, {io::npy_member<double>("a", "<f8", {3}, values)});
  const auto arrays = io::read_npz(plain);
  EXPECT_EQ(arrays.at("a").values, values);
}

TEST(Connectome, BadInput) {
  std::mt19937 rng(test::test_seed());
  const Image image = make_series(10, 5, rng, false);
  EXPECT_THROW(node_series(image, std::vector<uint8_t>(10, 0), CorrelationMethod::kPearson), std::invalid_argument);
  EXPECT_THROW(node_series(image, std::vector<uint8_t>(9, 1), CorrelationMethod::kPearson), std::invalid_argument);
  const Image three_d = make_series(10, 2, rng, false);
  EXPECT_THROW(node_series(three_d, std::vector<uint8_t>(10, 1), CorrelationMethod::kPearson), std::invalid_argument);
  Image with_nan = image;
  with_nan.volume(3)[4] = NAN;
  EXPECT_THROW(node_series(with_nan, std::vector<uint8_t>(10, 1), CorrelationMethod::kPearson), std::invalid_argument);
  const NodeSeries series = node_series(image, std::vector<uint8_t>(10, 1), CorrelationMethod::kPearson);
  EXPECT_THROW(collect(series, {.value = NAN}), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
