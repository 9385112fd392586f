// `rtfmri connectome BOLD (--threshold R | --density D) --out PREFIX`: the voxel-wise connectome of a 4D NIfTI on the
// device (Pearson, Spearman or Kendall's tau-b between every pair of mask voxels, thresholded by value or density),
// written as scipy.sparse's CSR .npz with the node -> voxel map, degree and strength maps and a JSON summary. The
// pairs are spread over the devices of --devices and the ranks of mpirun in chunks of tile rows
// (core/connectome/connectome_chunks.hpp); rank 0 writes the outputs. docs/algorithms/connectome.md, docs/scale.md.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "core/connectome/connectome_chunks.hpp"
#include "core/connectome/density_threshold.hpp"
#include "core/connectome/kendall.hpp"
#include "core/connectome/node_series.hpp"
#include "core/connectome/sparse_graph.hpp"
#include "core/connectome/thresholded_correlation.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/npz_writer.hpp"
#include "core/io/output_set.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/scale/chunk_files.hpp"
#include "core/util/hash.hpp"

namespace {

struct ConnectomeArgs {
  std::string bold, mask, out, method = "pearson", chunk_dir;
  double threshold = std::nan(""), density = std::nan("");
  bool absolute = false;
  uint64_t seed = 1;
};

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

void run(const ConnectomeArgs& args, const rtf::cli::GlobalOptions& globals) {
  using namespace rtf;
  const cli::Stopwatch clock;
  const bool kendall = args.method == "kendall";
  const bool by_density = !std::isnan(args.density);
  if (by_density == !std::isnan(args.threshold)) throw std::invalid_argument("give --threshold R or --density D");
  if (!by_density && !(std::abs(args.threshold) <= 1.0)) {
    throw std::invalid_argument(fmt::format("--threshold {}: a correlation threshold lies in [-1, 1]", args.threshold));
  }
  if (by_density && !(args.density > 0.0 && args.density <= 1.0)) {
    throw std::invalid_argument(fmt::format("--density {}: a density lies in (0, 1]", args.density));
  }
  Workers workers = cli::open_workers(globals);
  const Ranks& ranks = workers.ranks();
  const bool root = workers.root();
  // Every rank reads the inputs (in place where it sees rank 0's files, else rank 0's copies: Ranks::local_input) and
  // prepares the node series on its first device, all at the same time; share_series then checks them against rank
  // 0's and sends rank 0's only where one differs, so that every rank correlates rank 0's floats whatever its devices.
  ImageHeader grid;
  NodeSeries series;
  {
    const Image bold = read_nifti(ranks.local_input(args.bold));
    if (bold.nt() < 3) {
      throw std::invalid_argument(fmt::format("{}: a connectome needs a 4D series (>= 3 volumes)", args.bold));
    }
    grid = bold.header();
    std::vector<uint8_t> mask;
    if (!args.mask.empty()) {
      const Image m = read_nifti(ranks.local_input(args.mask));
      cli::require_same_grid(bold.header(), args.bold, m.header(), args.mask);
      mask.resize(m.volume(0).size());
      std::transform(m.volume(0).begin(), m.volume(0).end(), mask.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
    } else {
      mask = compute_brain_mask(workers.device(0), bold, {.volume = -1}).inside;
    }
    const CorrelationMethod method =
        args.method == "spearman" ? CorrelationMethod::kSpearman : CorrelationMethod::kPearson;
    series = node_series(bold, mask, method, false);
  }
  if (kendall) {
    mark_constant_series(series);
  } else {
    normalise_on_device(workers.device(0), series);
  }
  if (root && by_density) {
    const double need = density_memory_estimate(series, args.density), have = available_memory();
    if (have > 0 && need > 0.8 * have) {
      throw std::invalid_argument(
          fmt::format("density {} needs about {:.1f} GiB of host memory for its edges; {:.1f} GiB "
                      "are available: choose a lower density or a smaller mask",
                      args.density, need / (1 << 30), have / (1 << 30)));
    }
  }
  const double prepared_at = clock.seconds();
  bool series_sent = false;
  const std::string key = share_series(ranks, series, &series_sent);
  spdlog::debug("connectome: node series prepared at {:.3f} s, shared at {:.3f} s ({})", prepared_at, clock.seconds(),
                series_sent ? "rank 0's sent" : "every rank's own");
  const auto invalid = static_cast<int64_t>(std::count(series.valid.begin(), series.valid.end(), 0));
  const std::string rule = by_density ? fmt::format("density {}", args.density)
                                      : fmt::format("{} {}", args.absolute ? "|r| >=" : "r >=", args.threshold);
  spdlog::info("connectome: {} nodes ({} constant, excluded), {} volumes, {}, {}", series.nodes(), invalid,
               series.length, args.method, rule);
  // Chunks of tile rows over the devices and ranks; their files in PREFIX_chunks/ (or --chunk-dir) for a restart.
  const std::filesystem::path chunk_dir = args.chunk_dir == "none" ? std::filesystem::path()
                                          : args.chunk_dir.empty() ? std::filesystem::path(args.out + "_chunks")
                                                                   : std::filesystem::path(args.chunk_dir);
  cli::ProgressLog progress("connectome chunks");
  ChunkJobStats stats;
  const SpreadPassOptions options{
      .key = hash_hex({key, args.method}), .chunk_dir = chunk_dir, .progress = std::ref(progress), .stats = &stats};
  HostArray<Edge> edges;
  const cli::Stopwatch compute;
  double threshold = args.threshold;
  int passes = 1;
  if (by_density) {
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
    const SharedDecision shared = [&ranks](bool enough) {
      rtf::ChunkBytes flag{static_cast<uint8_t>(enough ? 1 : 0)};
      ranks.broadcast(flag);
      return flag.at(0) != 0;
    };
    DensityEdges d = edges_at_density(pass, series, args.density, args.absolute, args.seed, {}, 1.5, shared);
    edges = std::move(d.edges);
    threshold = d.threshold;
    passes = d.passes;
    if (root) {
      spdlog::info("density {}: {} of {} pairs, cut {} {:.7f} ({} pass(es))", args.density, d.requested, d.pairs,
                   args.absolute ? "|r| >=" : "r >=", d.threshold, d.passes);
    }
  } else {
    spread_correlations(
        workers, series, {.value = args.threshold, .absolute = args.absolute},
        [&](std::span<const Edge> found) { edges.insert(edges.end(), found.begin(), found.end()); }, options);
  }
  const double compute_seconds = compute.seconds();
  if (!root) return;  // rank 0 writes every output
  const SymmetricCsr graph = symmetric_csr(static_cast<int64_t>(series.nodes()), edges);
  edges = {};
  const auto n = static_cast<double>(series.nodes());
  const double density = n > 1 ? static_cast<double>(graph.edges()) / (n * (n - 1) / 2) : 0.0;
  io::OutputSet outputs;  // every file under its final name only when all are written
  write_csr_npz(outputs.add(args.out + "_edges.npz"), graph);
  io::write_npz(
      outputs.add(args.out + "_nodes.npz"),
      {io::npy_member<int64_t>("voxels", "<i8", {static_cast<int64_t>(series.nodes())}, series.voxels),
       io::npy_member<int64_t>("dims", "<i8", {3}, std::vector<int64_t>(grid.dims.begin(), grid.dims.end()))});
  const std::vector<int64_t> degrees = degree(graph);
  cli::write_voxel_values(outputs.add(args.out + "_degree.nii.gz"), grid, series.voxels,
                          std::vector<double>(degrees.begin(), degrees.end()));
  cli::write_voxel_values(outputs.add(args.out + "_strength.nii.gz"), grid, series.voxels, strength(graph));
  // Where it ran (one object, so that comparisons of runs on other devices drop it with the timings).
  const nlohmann::json devices{
      {"total", workers.total_devices()},    {"ranks", ranks.size()},
      {"this_rank", workers.device_count()}, {"chunks", connectome_chunk_count(static_cast<int64_t>(series.nodes()))},
      {"series_sent", series_sent},          {"restored_chunks", stats.restored}};
  const nlohmann::json summary{{"bold", args.bold},
                               {"nodes", series.nodes()},
                               {"constant_nodes", invalid},
                               {"volumes", series.length},
                               {"method", args.method},
                               {"threshold", threshold},
                               {"absolute", args.absolute},
                               {"density_requested", by_density ? nlohmann::json(args.density) : nlohmann::json()},
                               {"passes", passes},
                               {"edges", graph.edges()},
                               {"density", density},
                               {"devices", devices},
                               {"device_seconds", compute_seconds},
                               {"seconds", clock.seconds()}};
  write_text_atomically(outputs.add(args.out + "_connectome.json"), summary.dump(2) + "\n");
  outputs.commit();
  if (!chunk_dir.empty()) remove_chunk_files(chunk_dir);  // the outputs are whole: the chunk files are no longer needed
  fmt::print(
      "connectome: {} nodes, {} edges (density {:.3g}) -> {}_edges.npz, _nodes.npz, _degree, _strength, "
      "_connectome.json ({:.2f} s)\n",
      series.nodes(), graph.edges(), density, args.out, clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<ConnectomeArgs>();
  auto* cmd = app.add_subcommand(
      "connectome",
      "Voxel-wise connectome of a 4D NIfTI: thresholded correlations of every voxel pair, scipy.sparse "
      "CSR output (docs/algorithms/connectome.md)");
  cmd->footer(
      "Several devices and hosts (docs/scale.md): `rtfmri --devices all connectome ...` (or gpu, cpu, "
      "PLATFORM:DEVICE lists, cpu/N for N sub-devices) spreads the pairs over this machine's devices; `mpirun -np K "
      "rtfmri connectome ...` (or srun) over K processes, each on its own devices (--devices). The upper triangle is "
      "cut into chunks of 128-node tile rows of equal work; every rank reads the inputs (rank 0's copies where it does "
      "not see its files) and prepares the node series, checked against rank 0's (which is sent where one differs); "
      "rank 0 merges the edges and writes the outputs, which equal one device's bit for bit. Finished chunks are kept "
      "in PREFIX_chunks/ until the outputs are "
      "written (or in --chunk-dir): a stopped run started again with the same inputs and options reuses them.");
  cmd->add_option("BOLD", args->bold, "Preprocessed 4D NIfTI (e.g. our smooth/detrend/mc outputs)")
      ->required()
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--mask", args->mask,
                  "Nodes: the non-zero voxels of this mask (default: the brain mask of the mean "
                  "volume)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--method", args->method,
                  "pearson, spearman (average ranks for ties) or kendall (tau-b: ties in either series, as "
                  "scipy.stats.kendalltau)")
      ->check(CLI::IsMember({"pearson", "spearman", "kendall"}))
      ->capture_default_str();
  cmd->add_option("--threshold", args->threshold, "Keep pairs with r >= R (with --absolute: |r| >= R)");
  cmd->add_option("--density", args->density,
                  "Keep the fraction D of the pairs with the largest r (|r| with --absolute), exactly: a sampled cut, "
                  "one pass, the k largest selected");
  cmd->add_option("--seed", args->seed, "Seed of the node sample that estimates the density's cut")
      ->capture_default_str();
  cmd->add_flag("--absolute", args->absolute,
                "Keep negative correlations too (|r| >= R); without it negative correlations are dropped");
  cmd->add_option("--out", args->out,
                  "Output prefix: PREFIX_edges.npz (scipy.sparse.load_npz), PREFIX_nodes.npz (voxels: node -> voxel "
                  "index, x fastest; dims), PREFIX_degree.nii.gz, PREFIX_strength.nii.gz, PREFIX_connectome.json")
      ->required();
  cmd->add_option("--chunk-dir", args->chunk_dir,
                  "Where finished chunks are kept until the outputs are written, for a restart (default "
                  "PREFIX_chunks; a dense graph's chunks take as much space as its edges, e.g. ~90 GB at N 10^6 and "
                  "density 1%: put them on fast scratch, or `none` to keep none)");
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(76, setup);

}  // namespace
