// run_connectome: every rank prepares the node series at once and shares rank 0's, the pairs' passes run as spread
// chunk jobs (one, or the density's sample and passes), then rank 0 builds the CSR graph and writes the files.
#include "core/connectome/connectome_run.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/connectome/connectome_chunks.hpp"
#include "core/connectome/density_threshold.hpp"
#include "core/connectome/kendall.hpp"
#include "core/connectome/node_series.hpp"
#include "core/connectome/sparse_graph.hpp"
#include "core/image/same_grid.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/npz_writer.hpp"
#include "core/io/voxel_values.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/scale/broadcast.hpp"
#include "core/scale/job_key.hpp"
#include "core/scale/scale_out.hpp"
#include "core/util/progress_log.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

namespace {

// MemAvailable from /proc/meminfo in bytes (0 when unknown).
double available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024.0;
  }
  return 0.0;
}

void check_connectome_options(const ConnectomeOptions& o) {
  const bool by_density = !std::isnan(o.density);
  if (by_density == !std::isnan(o.threshold)) throw std::invalid_argument("give --threshold R or --density D");
  if (!by_density && !(std::abs(o.threshold) <= 1.0)) {
    throw std::invalid_argument(fmt::format("--threshold {}: a correlation threshold lies in [-1, 1]", o.threshold));
  }
  if (by_density && !(o.density > 0.0 && o.density <= 1.0)) {
    throw std::invalid_argument(fmt::format("--density {}: a density lies in (0, 1]", o.density));
  }
}

// Every rank reads the inputs (in place where it sees rank 0's files, else rank 0's copies) and prepares the node
// series on its first device, all at the same time; share_series then checks them against rank 0's and sends rank 0's
// only where one differs, so that every rank correlates rank 0's floats whatever its devices.
NodeSeries prepare_series(const ConnectomeOptions& o, ScaleOut& scale, ImageHeader& grid) {
  Device& device = scale.workers().device(0);
  NodeSeries series;
  {
    const Image bold = read_nifti(scale.input(o.bold));
    if (bold.nt() < 3) {
      throw std::invalid_argument(fmt::format("{}: a connectome needs a 4D series (>= 3 volumes)", o.bold));
    }
    grid = bold.header();
    std::vector<uint8_t> mask;
    if (!o.mask.empty()) {
      const Image m = read_nifti(scale.input(o.mask));
      require_same_grid(bold.header(), o.bold, m.header(), o.mask);
      mask.resize(m.volume(0).size());
      std::transform(m.volume(0).begin(), m.volume(0).end(), mask.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
    } else {
      mask = compute_brain_mask(device, bold, {.volume = -1}).inside;
    }
    const CorrelationMethod method =
        o.method == "spearman" ? CorrelationMethod::kSpearman : CorrelationMethod::kPearson;
    series = node_series(bold, mask, method, false);
  }
  if (o.method == "kendall") {
    mark_constant_series(series);
  } else {
    normalise_on_device(device, series);
  }
  return series;
}

// Refuses a density whose edges would not fit in the host's memory (rank 0, which holds them).
void check_density_memory(const ConnectomeOptions& o, const NodeSeries& series) {
  const double need = density_memory_estimate(series, o.density), have = available_memory();
  if (have > 0 && need > 0.8 * have) {
    throw std::invalid_argument(
        fmt::format("density {} needs about {:.1f} GiB of host memory for its edges; {:.1f} GiB "
                    "are available: choose a lower density or a smaller mask",
                    o.density, need / (1 << 30), have / (1 << 30)));
  }
}

struct ConnectomeEdges {
  HostArray<Edge> edges;  // on rank 0
  double threshold = 0.0;
  int passes = 1;
};

// The edges of every pair, on rank 0: one pass at the threshold, or the density's sample and passes.
ConnectomeEdges compute_edges(const ConnectomeOptions& o, ScaleOut& scale, const NodeSeries& series,
                              const SpreadPassOptions& options) {
  Workers& workers = scale.workers();
  ConnectomeEdges out{{}, o.threshold, 1};
  if (std::isnan(o.density)) {
    spread_correlations(
        workers, series, {.value = o.threshold, .absolute = o.absolute},
        [&](std::span<const Edge> found) { out.edges.insert(out.edges.end(), found.begin(), found.end()); }, options);
    return out;
  }
  // The node sample (small) runs on every rank's first device; the passes over all pairs go through the job, and
  // whether to repeat one is rank 0's decision, shared so that every rank takes the same path.
  const CorrelationPass pass = [&](const NodeSeries& s, const CorrelationThreshold& t, const EdgeSink& sink,
                                   const TileRowProgress&) {
    if (&s == &series) {
      spread_correlations(workers, s, t, sink, options);
    } else {
      correlation_rows(workers.device(0), s, t, {}, sink);
    }
  };
  const SharedDecision shared = [&scale](bool enough) { return broadcast_flag(scale.ranks(), enough); };
  DensityEdges d = edges_at_density(pass, series, o.density, o.absolute, o.seed, {}, 1.5, shared);
  if (scale.root()) {
    spdlog::info("density {}: {} of {} pairs, cut {} {:.7f} ({} pass(es))", o.density, d.requested, d.pairs,
                 o.absolute ? "|r| >=" : "r >=", d.threshold, d.passes);
  }
  return {std::move(d.edges), d.threshold, d.passes};
}

}  // namespace

void run_connectome(const ConnectomeOptions& o, const DeviceChoice& devices) {
  const Stopwatch clock;
  check_connectome_options(o);
  const bool by_density = !std::isnan(o.density);
  ScaleOut scale(devices);
  ImageHeader grid;
  NodeSeries series = prepare_series(o, scale, grid);
  if (scale.root() && by_density) check_density_memory(o, series);
  const double prepared_at = clock.seconds();
  bool series_sent = false;
  const std::string key = share_series(scale.ranks(), series, &series_sent);
  spdlog::debug("connectome: node series prepared at {:.3f} s, shared at {:.3f} s ({})", prepared_at, clock.seconds(),
                series_sent ? "rank 0's sent" : "every rank's own");
  const auto invalid = static_cast<int64_t>(std::count(series.valid.begin(), series.valid.end(), 0));
  const std::string rule = by_density ? fmt::format("density {}", o.density)
                                      : fmt::format("{} {}", o.absolute ? "|r| >=" : "r >=", o.threshold);
  spdlog::info("connectome: {} nodes ({} constant, excluded), {} volumes, {}, {}", series.nodes(), invalid,
               series.length, o.method, rule);
  // Chunks of tile rows over the devices and ranks; their files in PREFIX_chunks/ (or --chunk-dir) for a restart.
  const std::filesystem::path chunk_dir = o.chunk_dir == "none" ? std::filesystem::path()
                                          : o.chunk_dir.empty() ? std::filesystem::path(o.out + "_chunks")
                                                                : std::filesystem::path(o.chunk_dir);
  ProgressLog progress("connectome chunks");
  ChunkJobStats stats;
  const SpreadPassOptions options{
      .key = job_key(key, {o.method}), .chunk_dir = chunk_dir, .progress = std::ref(progress), .stats = &stats};
  const Stopwatch compute;
  ConnectomeEdges found = compute_edges(o, scale, series, options);
  const double compute_seconds = compute.seconds();
  if (!scale.root()) return;  // rank 0 writes every output
  const SymmetricCsr graph = symmetric_csr(static_cast<int64_t>(series.nodes()), found.edges);
  found.edges = {};
  const auto n = static_cast<double>(series.nodes());
  const double density = n > 1 ? static_cast<double>(graph.edges()) / (n * (n - 1) / 2) : 0.0;
  io::OutputSet outputs;  // every file under its final name only when all are written
  write_csr_npz(outputs.add(o.out + "_edges.npz"), graph);
  io::write_npz(
      outputs.add(o.out + "_nodes.npz"),
      {io::npy_member<int64_t>("voxels", "<i8", {static_cast<int64_t>(series.nodes())}, series.voxels),
       io::npy_member<int64_t>("dims", "<i8", {3}, std::vector<int64_t>(grid.dims.begin(), grid.dims.end()))});
  const std::vector<int64_t> degrees = degree(graph);
  write_voxel_values(outputs.add(o.out + "_degree.nii.gz"), grid, series.voxels,
                     std::vector<double>(degrees.begin(), degrees.end()));
  write_voxel_values(outputs.add(o.out + "_strength.nii.gz"), grid, series.voxels, strength(graph));
  // Where it ran (one object, so that comparisons of runs on other devices drop it with the timings).
  Workers& workers = scale.workers();
  const nlohmann::json where{
      {"total", workers.total_devices()},    {"ranks", scale.ranks().size()},
      {"this_rank", workers.device_count()}, {"chunks", connectome_chunk_count(static_cast<int64_t>(series.nodes()))},
      {"series_sent", series_sent},          {"restored_chunks", stats.restored}};
  const nlohmann::json summary{{"bold", o.bold},
                               {"nodes", series.nodes()},
                               {"constant_nodes", invalid},
                               {"volumes", series.length},
                               {"method", o.method},
                               {"threshold", found.threshold},
                               {"absolute", o.absolute},
                               {"density_requested", by_density ? nlohmann::json(o.density) : nlohmann::json()},
                               {"passes", found.passes},
                               {"edges", graph.edges()},
                               {"density", density},
                               {"devices", where},
                               {"device_seconds", compute_seconds},
                               {"seconds", clock.seconds()}};
  write_text_atomically(outputs.add(o.out + "_connectome.json"), summary.dump(2) + "\n");
  scale.commit(outputs, chunk_dir, true);  // a folder the user named (--chunk-dir) keeps its other files
  fmt::print(
      "connectome: {} nodes, {} edges (density {:.3g}) -> {}_edges.npz, _nodes.npz, _degree, _strength, "
      "_connectome.json ({:.2f} s)\n",
      series.nodes(), graph.edges(), density, o.out, clock.seconds());
}

}  // namespace rtf
