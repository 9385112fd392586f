// `rtfmri randomise`: FSL randomise's command line (-i -o -d -t -e -m -1 -n -x -c -C -D --seed) for permutation
// inference on the device: t statistics of each contrast, with -x the voxel-wise uncorrected and family-wise corrected
// (max-T) p maps, with -c / -C the cluster-extent / cluster-mass FWE p maps, as 1 - p, named as randomise names them.
// Freedman-Lane for general designs, sign flipping for -1, exhaustive enumeration when the distinct rearrangements are
// no more than -n. The permutations are spread in chunks over --devices and MPI ranks (core/permutation/
// permutation_chunks.hpp), rank 0 writing every output. docs/algorithms/randomise.md, docs/scale.md.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "cli/option_checks.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/permutation/clusters.hpp"
#include "core/permutation/fwe.hpp"
#include "core/permutation/permutation_chunks.hpp"
#include "core/permutation/permutation_set.hpp"
#include "core/permutation/t_contrast_model.hpp"
#include "core/permutation/tfce.hpp"
#include "core/permutation/vest.hpp"
#include "core/permutation/voxel_permutation.hpp"
#include "core/scale/chunk_job.hpp"
#include "core/scale/ranks.hpp"
#include "core/util/hash.hpp"

namespace {

struct RandomiseArgs {
  std::vector<std::string> inputs;
  std::string output, design, contrasts, f_contrasts, groups, mask;
  bool one_sample = false, voxelwise = false, tfce = false, demean = false;
  double cluster_extent = std::nan(""), cluster_mass = std::nan("");  // NaN: not asked for
  int permutations = 5000;
  uint64_t seed = 0;
  // TFCE's parameters, as randomise names them (--T2: TBSS's 2D setting, E 1).
  double tfce_h = rtf::TfceStatistics::kDefaultH, tfce_e = rtf::TfceStatistics::kDefaultE;
  int tfce_c = 26;
  bool tfce_2d = false;
};

// The subjects: one 4D image, or several 3D images on one grid (one per subject), in order.
rtf::Image read_subjects(const std::vector<std::string>& inputs) {
  if (inputs.size() == 1) return rtf::read_nifti(inputs[0]);
  std::vector<rtf::Image> volumes;
  for (const std::string& f : inputs) {
    volumes.push_back(rtf::read_nifti(f));
    if (volumes.back().nt() != 1) throw std::invalid_argument(fmt::format("{}: with several -i, each must be 3D", f));
    rtf::cli::require_same_grid(volumes.front().header(), inputs.front(), volumes.back().header(), f);
  }
  rtf::ImageHeader h = volumes.front().header();
  h.num_volumes = static_cast<int64_t>(volumes.size());
  std::vector<float> data;
  for (const rtf::Image& v : volumes) data.insert(data.end(), v.data().begin(), v.data().end());
  return {h, std::move(data)};
}

// Voxels of the analysis: the mask's non-zero voxels, or without one, the voxels not zero in every subject.
std::vector<int64_t> analysis_voxels(const rtf::Image& data, const std::string& mask_path) {
  const int64_t nvox = data.header().voxels_per_volume();
  std::vector<int64_t> voxels;
  if (!mask_path.empty()) {
    const rtf::Image mask = rtf::read_nifti(mask_path);
    rtf::cli::require_same_grid(data.header(), "the input", mask.header(), mask_path);
    const auto m = mask.volume(0);
    for (int64_t v = 0; v < nvox; ++v) {
      if (m[static_cast<size_t>(v)] != 0.0f && std::isfinite(m[static_cast<size_t>(v)])) voxels.push_back(v);
    }
    if (voxels.empty()) throw std::invalid_argument(fmt::format("{}: the mask is empty", mask_path));
  } else {
    for (int64_t v = 0; v < nvox; ++v) {
      bool any = false;
      for (int64_t s = 0; s < data.nt() && !any; ++s) any = data.volume(s)[static_cast<size_t>(v)] != 0.0f;
      if (any) voxels.push_back(v);
    }
    if (voxels.empty()) throw std::invalid_argument("the input is zero everywhere: nothing to test");
  }
  return voxels;
}

// Rearrangements per launch when the t maps go to the cluster / TFCE statistics (their batch).
constexpr int kBatch = 64;

// One contrast's results, kept until every contrast is done.
struct ContrastResult {
  std::vector<float> t;                      // the observed statistic
  float dh = 0.0f;                           // TFCE's step (0: none)
  bool permuted = false;                     // whether permutations ran (-x, -c, -C, -T)
  rtf::PermutationChunkResult permutations;  // their counts and maxima
  double seconds = 0.0;
};

// Rank 0's values on every rank.
void broadcast_values(const rtf::Ranks& ranks, std::vector<double>& values) {
  if (ranks.size() == 1) return;
  rtf::ChunkWriter w;
  w.values(values);
  rtf::ChunkBytes bytes = w.take();
  ranks.broadcast(bytes);
  rtf::ChunkReader r(bytes);
  values = r.values<double>();
}

template <typename T>
std::string_view bytes_of(const std::vector<T>& xs) {
  return {reinterpret_cast<const char*>(xs.data()), xs.size() * sizeof(T)};
}

std::string_view bytes_of(const Eigen::MatrixXd& m) {
  return {reinterpret_cast<const char*>(m.data()), static_cast<size_t>(m.size()) * sizeof(double)};
}

// What a contrast's chunk results depend on: the residuals, the model, the rearrangements, the options and the
// chunking. Chunk files of another key are not reused.
std::string job_key(const std::vector<float>& residuals, const rtf::TContrastModel& model,
                    const rtf::PermutationSet& set, const rtf::PermutationChunkOptions& options,
                    const RandomiseArgs& args, size_t contrast, int max_block) {
  const std::string settings = fmt::format(
      "randomise chunks v2; n {} p {} q {} dof {:a} vf {:a}; set {} kind {} count {} seed {}; -c {:a} -C {:a}; "
      "tfce dh {:a} E {:a} H {:a} C {} 2d {}; chunks {} then {} launch {}; contrast {}",
      model.n, model.p, model.q, model.dof, model.variance_factor, set.n, static_cast<int>(set.kind), set.count,
      args.seed, options.cluster_extent, options.cluster_mass, static_cast<double>(options.tfce_dh), args.tfce_e,
      args.tfce_h, args.tfce_c, args.tfce_2d, rtf::kPermutationChunkSize, rtf::kPermutationTailChunkSize, max_block,
      contrast);
  const Eigen::MatrixXd a = model.a;
  return rtf::hash_hex({settings, bytes_of(residuals), bytes_of(model.basis), bytes_of(a), bytes_of(model.quadratic),
                        bytes_of(set.order), bytes_of(set.signs)});
}

void run(const RandomiseArgs& args, const rtf::cli::GlobalOptions& globals) {
  rtf::cli::Stopwatch clock;
  for (const auto& [flag, value] : {std::pair{"-c", args.cluster_extent}, std::pair{"-C", args.cluster_mass}}) {
    if (!std::isnan(value) && !(value > 0.0 && std::isfinite(value))) {
      throw std::invalid_argument(fmt::format("{} {}: a cluster-forming threshold must be a positive t", flag, value));
    }
  }
  if (!args.f_contrasts.empty() && args.one_sample) throw std::invalid_argument("-f needs -d and -t, not -1");
  if (args.one_sample && (!args.design.empty() || !args.contrasts.empty())) {
    throw std::invalid_argument("-1 tests the group mean by sign flipping: give either -1 or -d and -t, not both");
  }
  if (!args.one_sample && (args.design.empty() || args.contrasts.empty())) {
    throw std::invalid_argument("give -d design.mat and -t design.con, or -1 for a one-sample test");
  }
  if (args.one_sample && !args.groups.empty()) {
    throw std::invalid_argument("exchangeability blocks (-e) with sign flipping (-1) are not supported");
  }
  rtf::cli::WorkersOpening opening(globals);  // while the inputs are read
  // Read everything and check it before any computation or output. Rank 0 reads the files; other ranks get copies.
  const rtf::Ranks& world = rtf::Ranks::world();
  const auto local = [&world](const std::string& path) { return path.empty() ? path : world.local_input(path); };
  std::vector<std::string> inputs;
  for (const std::string& f : args.inputs) inputs.push_back(local(f));
  const std::string design_file = local(args.design), contrasts_file = local(args.contrasts);
  const std::string f_contrasts_file = local(args.f_contrasts), groups_file = local(args.groups);
  const std::string mask_file = local(args.mask);
  const rtf::Image data = read_subjects(inputs);
  const int n = static_cast<int>(data.nt());
  Eigen::MatrixXd design;
  std::vector<Eigen::RowVectorXd> contrasts;
  std::vector<std::string> names;
  if (args.one_sample) {
    design = Eigen::MatrixXd::Ones(n, 1);
    contrasts.push_back(Eigen::RowVectorXd::Ones(1));
    names.emplace_back("group mean");
  } else {
    design = rtf::read_vest(design_file).values;
    if (design.rows() != n) {
      throw std::invalid_argument(
          fmt::format("{}: {} rows, but the input has {} subjects (volumes)", args.design, design.rows(), n));
    }
    const rtf::VestMatrix con = rtf::read_vest(contrasts_file);
    for (Eigen::Index k = 0; k < con.values.rows(); ++k) {
      if (con.values.cols() != design.cols()) {
        throw std::invalid_argument(fmt::format("{}: contrasts have {} weights but {} has {} columns", args.contrasts,
                                                con.values.cols(), args.design, design.cols()));
      }
      contrasts.emplace_back(con.values.row(k));
      names.push_back(static_cast<size_t>(k) < con.names.size() ? con.names[static_cast<size_t>(k)]
                                                                : fmt::format("contrast {}", k + 1));
    }
  }
  std::vector<int> blocks;
  if (!args.groups.empty()) {
    blocks = rtf::read_vest_groups(groups_file);
    if (static_cast<int>(blocks.size()) != n) {
      throw std::invalid_argument(
          fmt::format("{}: {} rows, but the input has {} subjects", args.groups, blocks.size(), n));
    }
  }
  const std::vector<int64_t> voxels = analysis_voxels(data, mask_file);
  const size_t nv = voxels.size();
  std::vector<float> values(static_cast<size_t>(n) * nv);
  for (int s = 0; s < n; ++s) {
    const auto vol = data.volume(s);
    for (size_t i = 0; i < nv; ++i) {
      const float x = vol[static_cast<size_t>(voxels[i])];
      if (!std::isfinite(x)) {
        const int64_t v = voxels[i], nx = data.header().dims[0], ny = data.header().dims[1];
        throw std::invalid_argument(
            fmt::format("subject {} (volume {}) is not finite at voxel ({}, {}, {}) inside the mask", s + 1, s, v % nx,
                        (v / nx) % ny, v / (nx * ny)));
      }
      values[static_cast<size_t>(s) * nv + i] = x;
    }
  }
  if (args.demean) {  // -D: the data per voxel and the design's columns to mean zero
    for (size_t i = 0; i < nv; ++i) {
      double mean = 0.0;
      for (int s = 0; s < n; ++s) mean += values[static_cast<size_t>(s) * nv + i];
      mean /= n;
      for (int s = 0; s < n; ++s) values[static_cast<size_t>(s) * nv + i] -= static_cast<float>(mean);
    }
    for (Eigen::Index c = 0; c < design.cols(); ++c) {
      const double mean = design.col(c).mean();
      if (std::abs(mean) > 1e-9 * std::max(1.0, design.col(c).cwiseAbs().maxCoeff())) {
        spdlog::warn("-D: design column {} had mean {:.4g}; demeaned", c + 1, mean);
      }
      design.col(c).array() -= mean;
    }
  }
  std::vector<rtf::TContrastModel> models;  // the t contrasts, then the F tests
  std::vector<std::string> suffixes;
  for (size_t k = 0; k < contrasts.size(); ++k) {
    models.push_back(rtf::make_t_contrast_model(design, contrasts[k], args.one_sample ? "-1" : args.design));
    suffixes.push_back(fmt::format("tstat{}", k + 1));
  }
  if (!args.f_contrasts.empty()) {  // design.fts: one row per F test, a 0/1 per t contrast
    const Eigen::MatrixXd fts = rtf::read_vest(f_contrasts_file).values;
    if (fts.cols() != static_cast<Eigen::Index>(contrasts.size())) {
      throw std::invalid_argument(fmt::format("{}: {} columns, but {} has {} t contrasts", args.f_contrasts, fts.cols(),
                                              args.contrasts, contrasts.size()));
    }
    for (Eigen::Index f = 0; f < fts.rows(); ++f) {
      std::vector<Eigen::RowVectorXd> picked;
      std::string which;
      for (Eigen::Index k = 0; k < fts.cols(); ++k) {
        if (fts(f, k) != 0.0 && fts(f, k) != 1.0) {
          throw std::invalid_argument(fmt::format("{}: F test {} has {} (only 0 and 1 select t contrasts)",
                                                  args.f_contrasts, f + 1, fts(f, k)));
        }
        if (fts(f, k) == 1.0) {
          picked.push_back(contrasts[static_cast<size_t>(k)]);
          which += fmt::format("{}{}", which.empty() ? "" : ", ", k + 1);
        }
      }
      if (picked.empty())
        throw std::invalid_argument(fmt::format("{}: F test {} selects no contrast", args.f_contrasts, f + 1));
      Eigen::MatrixXd rows(static_cast<Eigen::Index>(picked.size()), design.cols());
      for (size_t i = 0; i < picked.size(); ++i) rows.row(static_cast<Eigen::Index>(i)) = picked[i];
      models.push_back(
          rtf::make_f_contrast_model(design, rows, fmt::format("{} (F test {})", args.f_contrasts, f + 1)));
      suffixes.push_back(fmt::format("fstat{}", f + 1));
      names.push_back(fmt::format("F of contrasts {}", which));
    }
  }
  const auto kind = args.one_sample ? rtf::PermutationKind::kSignFlip : rtf::PermutationKind::kPermute;
  const rtf::PermutationSet set = rtf::make_permutation_set(kind, n, args.permutations, args.seed, blocks, &design);
  spdlog::info("{} subjects, {} voxels, {} contrast(s); {} {}{}", n, nv, contrasts.size(), set.count,
               args.one_sample ? "sign flips" : "permutations",
               set.exhaustive ? fmt::format(" (exhaustive: all {:.0f} distinct ones, fewer than -n {})", set.distinct,
                                            args.permutations)
                              : fmt::format(" (random, seed {}, of {:.3g} distinct)", args.seed, set.distinct));

  const bool extent = !std::isnan(args.cluster_extent), mass = !std::isnan(args.cluster_mass);
  const bool want_tfce = args.tfce || args.tfce_2d;
  std::vector<uint8_t> inside(static_cast<size_t>(data.header().voxels_per_volume()), 0);
  for (int64_t v : voxels) inside[static_cast<size_t>(v)] = 1;
  // The cluster and TFCE statistics' neighbour tables (of the options that use them), made once for every device,
  // while the devices open.
  const auto& dims = data.header().dims;
  const rtf::MaskNeighbours cluster_table =
      extent || mass ? rtf::ClusterStatistics::neighbours(dims, inside, 26) : rtf::MaskNeighbours{};
  const rtf::MaskNeighbours tfce_table =
      want_tfce ? rtf::TfceStatistics::neighbours(dims, inside, args.tfce_c) : rtf::MaskNeighbours{};
  rtf::Workers workers = opening.get();
  const rtf::Ranks& ranks = workers.ranks();
  // Per device slot, made on first use there (each slot is used by one thread at a time): the cluster and TFCE
  // statistics (for every contrast) and the current contrast's blocks.
  const int slots = workers.device_count();
  std::vector<std::unique_ptr<rtf::ClusterStatistics>> clusters(static_cast<size_t>(slots));
  std::vector<std::unique_ptr<rtf::TfceStatistics>> tfces(static_cast<size_t>(slots));
  const auto cluster_stats = [&](int slot) -> rtf::ClusterStatistics& {
    auto& c = clusters[static_cast<size_t>(slot)];
    if (!c) c = std::make_unique<rtf::ClusterStatistics>(workers.device(slot), cluster_table, kBatch);
    return *c;
  };
  const auto tfce_stats = [&](int slot) -> rtf::TfceStatistics& {
    auto& t = tfces[static_cast<size_t>(slot)];
    if (!t) {
      t = std::make_unique<rtf::TfceStatistics>(workers.device(slot), tfce_table, kBatch,
                                                args.tfce_2d ? 1.0 : args.tfce_e, args.tfce_h);
    }
    return *t;
  };
  const std::string chunk_root = args.output + "_chunks";

  // Every contrast's permutations first (on every rank), then rank 0 writes every output: a run stopped midway leaves
  // its chunk files and no output.
  std::vector<ContrastResult> results(models.size());
  for (size_t k = 0; k < models.size(); ++k) {
    ContrastResult& result = results[k];
    rtf::cli::Stopwatch contrast_clock;
    // The data less the contrast's nuisance (a copy only where there is nuisance to remove: -1 tests the data).
    std::vector<float> without_nuisance;
    if (models[k].nuisance_rank > 0) {
      without_nuisance = values;
      rtf::remove_nuisance(models[k], without_nuisance, nv);
    }
    const std::vector<float>& residuals = models[k].nuisance_rank > 0 ? without_nuisance : values;
    const bool f_test = models[k].is_f();
    // Cluster and TFCE inference (t contrasts): each launch's t maps are labelled on the device; per rearrangement
    // the largest extent / mass / TFCE.
    rtf::PermutationChunkOptions options;
    if (!f_test) {
      options.cluster_extent = args.cluster_extent;
      options.cluster_mass = args.cluster_mass;
    }
    const bool tfce_here = want_tfce && !f_test;
    const int max_block = options.clusters() || tfce_here ? kBatch : 128;
    const bool permute = args.voxelwise || options.clusters() || tfce_here;
    // Every device slot's blocks (slot 0's are the observer's) and statistics, made in the background while the first
    // device computes the observed statistic: a chunk waits only for its own slot's.
    std::vector<std::unique_ptr<rtf::VoxelPermutationBlocks>> slot_blocks(static_cast<size_t>(slots));
    std::vector<std::future<void>> preparing(static_cast<size_t>(slots));
    for (int slot = 0; slot < slots && permute; ++slot) {
      preparing[static_cast<size_t>(slot)] = std::async(std::launch::async, [&, slot] {
        const rtf::cli::Stopwatch setup_clock;
        if (slot > 0) {
          slot_blocks[static_cast<size_t>(slot)] = std::make_unique<rtf::VoxelPermutationBlocks>(
              workers.device(slot), models[k], set, residuals, nv, max_block);
        }
        const double blocks_s = setup_clock.seconds();
        if (options.clusters()) cluster_stats(slot);
        const double clusters_s = setup_clock.seconds();
        if (tfce_here) tfce_stats(slot);
        spdlog::debug(
            "randomise contrast {}: device slot {} ready in {:.3f} s (blocks {:.3f}, clusters {:.3f}, TFCE {:.3f})",
            k + 1, slot, setup_clock.seconds(), blocks_s, clusters_s - blocks_s, setup_clock.seconds() - clusters_s);
      });
    }
    // The observed statistic: rank 0's, on its first device, so every device of every rank counts against the same.
    const rtf::cli::Stopwatch observe_clock;
    auto observer =
        std::make_unique<rtf::VoxelPermutationBlocks>(workers.device(0), models[k], set, residuals, nv, max_block);
    std::vector<double> observed = observer->observe();
    spdlog::debug("randomise contrast {}: observed statistic in {:.3f} s", k + 1, observe_clock.seconds());
    broadcast_values(ranks, observed);
    result.t.assign(observed.begin(), observed.end());
    // TFCE's step: the observed map's largest t / 100 (at least 0.01).
    if (want_tfce && !f_test) {
      options.tfce_dh = std::max(*std::max_element(result.t.begin(), result.t.end()), 1.0f) / 100.0f;
    }
    result.dh = options.tfce_dh;
    if (permute) {
      observer->set_observed(observed);
      slot_blocks[0] = std::move(observer);
      rtf::ChunkJob job;
      job.name = fmt::format("randomise contrast {}", k + 1);
      job.chunks = rtf::permutation_chunk_count(set.count);
      job.key = job_key(residuals, models[k], set, options, args, k, max_block);
      job.chunk_dir = std::filesystem::path(chunk_root) / suffixes[k];
      job.compute = [&](rtf::Device&, int slot, int64_t chunk) {
        auto& ready = preparing[static_cast<size_t>(slot)];
        auto& b = slot_blocks[static_cast<size_t>(slot)];
        if (ready.valid()) {  // the slot's first chunk: its blocks and statistics (a failure there fails the chunk)
          ready.get();
          if (slot > 0) b->set_observed(observed);
        }
        if (!b) throw std::runtime_error(fmt::format("device slot {} could not be prepared", slot));
        return rtf::to_chunk_bytes(rtf::run_permutation_chunk(*b, options.clusters() ? &cluster_stats(slot) : nullptr,
                                                              options.tfce() ? &tfce_stats(slot) : nullptr, options,
                                                              rtf::permutation_chunk_range(chunk, set.count)));
      };
      rtf::cli::ProgressLog log(fmt::format("contrast {} ({}): chunks of {} then {} rearrangements", k + 1, names[k],
                                            rtf::kPermutationChunkSize, rtf::kPermutationTailChunkSize));
      const std::vector<rtf::ChunkBytes> chunks =
          workers.run(job, [&](int64_t done, int64_t total) { log(done, total); });
      for (const rtf::ChunkBytes& bytes : chunks) {
        rtf::merge_permutation_chunk(result.permutations, rtf::permutation_chunk_from_bytes(bytes));
      }
    }
    result.permuted = permute;
    result.seconds = contrast_clock.seconds();
  }
  if (!workers.root()) return;  // rank 0 writes everything
  rtf::io::OutputSet outputs;   // every file under its final name only when all are written

  nlohmann::json report = {{"subjects", n},
                           {"voxels", nv},
                           {"rearrangements", set.count},
                           {"exhaustive", set.exhaustive},
                           {"distinct", set.distinct},
                           {"kind", args.one_sample ? "sign-flip" : "permutation"},
                           {"seed", args.seed},
                           {"devices", workers.total_devices()},
                           {"ranks", ranks.size()},
                           {"contrasts", nlohmann::json::array()}};
  for (size_t k = 0; k < models.size(); ++k) {
    const ContrastResult& r = results[k];
    const rtf::PermutationChunkResult& perm = r.permutations;
    const std::string& suffix = suffixes[k];
    const bool f_test = models[k].is_f();
    std::vector<double> t(r.t.begin(), r.t.end());
    rtf::cli::write_voxel_values(outputs.add(args.output + "_" + suffix + ".nii.gz"), data.header(), voxels, t);
    nlohmann::json entry = {{"name", names[k]}, {"file", suffix}, {"max", *std::max_element(t.begin(), t.end())}};
    if (args.voxelwise) {
      rtf::VoxelPermutationResult whole;
      whole.t = r.t;
      whole.exceed = perm.exceed;
      whole.max_null = perm.max_null;
      auto p = whole.uncorrected_p();
      for (double& x : p) x = 1.0 - x;
      rtf::cli::write_voxel_values(outputs.add(args.output + "_vox_p_" + suffix + ".nii.gz"), data.header(), voxels, p);
      auto corrp = whole.corrected_p();
      size_t significant = 0;
      for (double& x : corrp) {
        significant += x <= 0.05 ? 1 : 0;
        x = 1.0 - x;
      }
      rtf::cli::write_voxel_values(outputs.add(args.output + "_vox_corrp_" + suffix + ".nii.gz"), data.header(), voxels,
                                   corrp);
      rtf::write_null_distribution(outputs.add(args.output + "_vox_null_" + suffix + ".txt"), whole.max_null);
      entry["fwe_significant_voxels"] = significant;
      spdlog::info("contrast {} ({}): max {:.3f}; {} voxel(s) at FWE p <= 0.05 ({:.2f} s)", k + 1, names[k],
                   entry["max"].get<double>(), significant, r.seconds);
    }
    entry["seconds"] = r.seconds;
    if (extent && !f_test) {
      const rtf::ObservedClusters o = cluster_stats(0).observed(r.t, static_cast<float>(args.cluster_extent));
      rtf::cli::write_voxel_values(outputs.add(args.output + "_clustere_corrp_" + suffix + ".nii.gz"), data.header(),
                                   voxels, rtf::fwe_one_minus_p(o.extent, perm.max_extent, 0.0));
      rtf::write_null_distribution(outputs.add(args.output + "_clustere_null_" + suffix + ".txt"), perm.max_extent);
      entry["clusters_extent"] = {
          {"threshold", args.cluster_extent}, {"clusters", o.clusters}, {"largest", perm.max_extent.at(0)}};
      spdlog::info("contrast {}: {} cluster(s) at t > {} (largest {} voxels)", k + 1, o.clusters, args.cluster_extent,
                   perm.max_extent.at(0));
    }
    if (mass && !f_test) {
      const rtf::ObservedClusters o = cluster_stats(0).observed(r.t, static_cast<float>(args.cluster_mass));
      rtf::cli::write_voxel_values(outputs.add(args.output + "_clusterm_corrp_" + suffix + ".nii.gz"), data.header(),
                                   voxels, rtf::fwe_one_minus_p(o.mass, perm.max_mass, 1e-6));
      rtf::write_null_distribution(outputs.add(args.output + "_clusterm_null_" + suffix + ".txt"), perm.max_mass);
      entry["clusters_mass"] = {
          {"threshold", args.cluster_mass}, {"clusters", o.clusters}, {"largest", perm.max_mass.at(0)}};
    }
    if (want_tfce && !f_test) {
      rtf::TfceStatistics& tfce = tfce_stats(0);
      const std::vector<float> observed = tfce.tfce(r.t, r.dh);
      rtf::cli::write_voxel_values(outputs.add(args.output + "_tfce_" + suffix + ".nii.gz"), data.header(), voxels,
                                   std::vector<double>(observed.begin(), observed.end()));
      // Float sums of up to ~100 terms on the device: a relative slack of 1e-4 keeps the identity's own maximum.
      rtf::cli::write_voxel_values(outputs.add(args.output + "_tfce_corrp_" + suffix + ".nii.gz"), data.header(),
                                   voxels, rtf::fwe_one_minus_p(observed, perm.max_tfce, 1e-4));
      rtf::write_null_distribution(outputs.add(args.output + "_tfce_null_" + suffix + ".txt"), perm.max_tfce);
      entry["tfce"] = {{"dh", r.dh},
                       {"E", tfce.extent_exponent()},
                       {"H", tfce.height_exponent()},
                       {"connectivity", args.tfce_c},
                       {"max", perm.max_tfce.at(0)}};
    }
    report["contrasts"].push_back(entry);
  }
  report["seconds"] = clock.seconds();
  rtf::write_text_atomically(outputs.add(args.output + "_randomise.json"), report.dump(2) + "\n");
  outputs.commit();
  std::error_code ignored;  // the outputs are whole: the chunk files are no longer needed
  std::filesystem::remove_all(chunk_root, ignored);
  spdlog::info("randomise: {} contrast(s) -> {}_* ({:.2f} s)", models.size(), args.output, clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto args = std::make_shared<RandomiseArgs>();
  auto* cmd = app.add_subcommand(
      "randomise",
      "Permutation inference as FSL randomise (same options and output names): t and F statistics; voxel-wise (-x), "
      "cluster (-c/-C) and TFCE (-T) FWE-corrected p maps, written as 1 - p (docs/algorithms/randomise.md). The "
      "rearrangements run in chunks (512, the last quarter 128) over the devices of --devices (before the subcommand: "
      "rtfmri --devices "
      "all randomise ...) and over the ranks of mpirun / srun (mpirun -np 4 rtfmri randomise ...), with results "
      "identical to one device's; a stopped run keeps PREFIX_chunks/ and, started again, reuses its finished chunks");
  cmd->add_option("-i,--in", args->inputs, "4D input (one volume per subject), or one 3D image per subject (repeat -i)")
      ->required()
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-o,--out", args->output, "Output prefix: PREFIX_tstat1.nii.gz, PREFIX_vox_corrp_tstat1.nii.gz, ...")
      ->required();
  cmd->add_option("-d,--design", args->design, "Design matrix (FSL VEST design.mat: one row per subject)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-t,--tcon", args->contrasts, "t contrasts (FSL VEST design.con: one row per contrast)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-f,--fcon", args->f_contrasts,
                  "F tests (design.fts: a row per F test, 1 for each t contrast it joins): PREFIX_fstatK, voxel-wise "
                  "inference (-x); cluster inference (-c/-C) is for t contrasts")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-e,--exchangeability", args->groups,
                  "Exchangeability blocks (design.grp): subjects are permuted only within their block")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("-m,--mask", args->mask, "Mask on the input's grid (default: voxels not zero in every subject)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_flag("-1,--one-sample", args->one_sample, "One-sample group-mean test by sign flipping (no -d/-t)");
  cmd->add_option("-n,--permutations", args->permutations,
                  "Rearrangements, the unpermuted one included; all distinct ones when there are no more")
      ->capture_default_str()
      ->check(rtf::cli::at_least(1, "the number of permutations"));
  cmd->add_flag("-x,--voxelwise", args->voxelwise,
                "Voxel-wise uncorrected and FWE-corrected p maps (vox_p, vox_corrp)");
  cmd->add_flag("-T,--tfce", args->tfce,
                "TFCE (E 0.5, H 2, 26-connected, step = the largest observed t / 100) of t contrasts: "
                "PREFIX_tfce_tstatK, PREFIX_tfce_corrp_tstatK");
  cmd->add_flag("--T2", args->tfce_2d, "TFCE with randomise's 2D setting (E 1, for TBSS skeletons): as -T otherwise");
  cmd->add_option("--tfce_H", args->tfce_h, "TFCE height exponent H")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--tfce_E", args->tfce_e, "TFCE extent exponent E")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--tfce_C", args->tfce_c, "TFCE connectivity: 6, 18 or 26 neighbours")
      ->check(CLI::IsMember({6, 18, 26}))
      ->capture_default_str();
  cmd->add_option("-c,--cluster-extent", args->cluster_extent,
                  "Cluster-extent inference of t contrasts, clusters of t > this (26-connected): "
                  "PREFIX_clustere_corrp_tstatK")
      ->check(rtf::cli::positive("a cluster-forming threshold (t)"));
  cmd->add_option("-C,--cluster-mass", args->cluster_mass,
                  "Cluster-mass inference (sum of t - threshold over a cluster): PREFIX_clusterm_corrp_tstatK")
      ->check(rtf::cli::positive("a cluster-forming threshold (t)"));
  cmd->add_flag("-D,--demean", args->demean, "Demean the data and the design's columns first");
  cmd->add_option("--seed", args->seed,
                  "Seed of the random rearrangements (the same seed gives the same ones anywhere)")
      ->capture_default_str();
  cmd->callback([args, &globals] { run(*args, globals); });
}

RTF_REGISTER_COMMAND(75, setup);

}  // namespace
