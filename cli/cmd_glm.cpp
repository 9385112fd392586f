// `rtfmri glm BOLD --events FILE --contrast NAME=EXPR --out PREFIX`: the first-level GLM of a 4D NIfTI with the live
// GLM's kernels: SPM's design from a BIDS events.tsv, optional confounds and AR(1) prewhitening; writes the design,
// betas, residual variance, mask and per contrast the estimate and t (or F) map. docs/algorithms/glm.md. With
// `--noise arP`, the AR(P) GLM (Cochrane-Orcutt, smoothed AR maps), and with `--permutations N` the first-level
// permutation test of Eklund et al. 2012 (docs/algorithms/glm_ar.md). With `--bayes [--noise ar1..ar4]` the Bayesian
// GLM's Gibbs sampler (cli/glm_bayes.hpp, docs/algorithms/bayes_glm.md).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "cli/glm_bayes.hpp"
#include "cli/option_checks.hpp"
#include "core/design/confounds.hpp"
#include "core/design/contrast.hpp"
#include "core/design/design_matrix.hpp"
#include "core/glm/ar_glm.hpp"
#include "core/glm/series_glm.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/nifti_io.hpp"
#include "core/io/output_set.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/permutation/first_level_permutation.hpp"
#include "core/permutation/fwe.hpp"

namespace {

struct GlmCli {
  std::string bold, events, out, mask, confounds, derivatives = "none";
  std::vector<std::string> contrasts, confound_columns;
  double tr_s = 0.0, highpass_s = 128.0, ar1 = 0.0, threshold = 3.1;
  int poly = -1;
  int microtime_onset = 8;
  bool no_mask = false;
  // AR(P) noise and the permutation test (docs/algorithms/glm_ar.md).
  std::string noise = "ols", permute_mode = "permute";
  int ar_iterations = 3, permutations = 0, connectivity = 26, batch = 16;
  double ar_fwhm = 6.0, fwhm = 0.0, cluster_threshold = 3.1, tfce_e = 0.5, tfce_h = 2.0;
  std::vector<std::string> inference{"voxel"};
  uint64_t seed = 0;
  // The Bayesian GLM (docs/algorithms/bayes_glm.md).
  bool bayes = false, noise_given = false;  // noise_given: --noise on the command line (--bayes: default ar1)
  rtf::cli::BayesGlmCli bayes_options;
};

int ar_order(const GlmCli& c) {
  return c.noise == "ols" ? 0 : c.noise.back() - '0';
}

// Contrast names become file-name-safe: letters and digits kept, '-' -> "Minus", '+' -> "Plus", others dropped.
std::string file_safe(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) out.push_back(c);
    if (c == '-') out += "Minus";
    if (c == '+') out += "Plus";
  }
  return out.empty() ? "contrast" : out;
}

rtf::DesignOptions design_options(const GlmCli& c, const rtf::Image& bold) {
  rtf::DesignOptions o;
  o.tr_s = c.tr_s > 0 ? c.tr_s : bold.header().tr_s;
  if (!(o.tr_s > 0)) throw std::invalid_argument(fmt::format("{}: no TR in the header; give --tr", c.bold));
  o.n_scans = bold.nt();
  o.microtime_onset = c.microtime_onset;
  if (c.derivatives == "temporal") o.derivatives = rtf::HrfDerivatives::kTemporal;
  if (c.derivatives == "dispersion") o.derivatives = rtf::HrfDerivatives::kTemporalDispersion;
  if (c.poly >= 0) {
    o.drift = rtf::DriftModel::kPolynomial;
    o.polynomial_order = c.poly;
  } else if (c.highpass_s > 0) {
    o.drift = rtf::DriftModel::kCosine;
    o.highpass_cutoff_s = c.highpass_s;
  } else {
    o.drift = rtf::DriftModel::kNone;
  }
  if (!c.confounds.empty()) {
    const rtf::ConfoundTable t = rtf::read_confounds(rtf::Ranks::world().local_input(c.confounds), c.confound_columns);
    if (t.values.rows() != bold.nt()) {
      throw std::invalid_argument(
          fmt::format("{}: {} rows for a series of {} volumes", c.confounds, t.values.rows(), bold.nt()));
    }
    o.confounds = t.values;
    o.confound_names = t.names;
  }
  return o;
}

void write_design(const std::filesystem::path& path, const rtf::DesignMatrix& d) {
  std::string text;
  const auto names = d.names();
  for (size_t j = 0; j < names.size(); ++j) text += (j ? "\t" : "") + names[j];
  text += "\n";
  for (Eigen::Index t = 0; t < d.x.rows(); ++t) {
    for (Eigen::Index j = 0; j < d.x.cols(); ++j) text += fmt::format("{}{:.8g}", j ? "\t" : "", d.x(t, j));
    text += "\n";
  }
  rtf::write_text_atomically(path, text);
}

// Voxels of a statistic map above `threshold` (absolute value for t) and its largest value, over finite voxels.
std::pair<int64_t, double> summarize(const rtf::Image& map, double threshold, bool absolute) {
  int64_t above = 0;
  double peak = 0.0;
  for (float v : map.data()) {
    if (!std::isfinite(v)) continue;
    const double x = absolute ? std::abs(v) : v;
    if (x > threshold) ++above;
    peak = std::max(peak, x);
  }
  return {above, peak};
}

// --noise arP [--permutations N]: the AR(P) GLM of the (optionally smoothed) series, then the permutation test.
void run_ar(const GlmCli& c, rtf::Device& device, const rtf::Image& bold, const rtf::DesignMatrix& design,
            const rtf::DesignOptions& options, const std::vector<rtf::GlmContrast>& contrasts,
            const std::vector<uint8_t>& mask, const rtf::cli::Stopwatch& clock) {
  using namespace rtf;
  const ArGlmOptions ar{.order = ar_order(c), .iterations = c.ar_iterations, .ar_fwhm_mm = c.ar_fwhm};
  const ArGlmImages fit = fit_ar_glm_series(device, bold, design.x, contrasts, mask, ar, c.fwhm);
  io::OutputSet outputs;  // every file under its final name only when all are written
  write_design(outputs.add(c.out + "_design.tsv"), design);
  write_nifti(outputs.add(c.out + "_beta.nii.gz"), fit.beta);
  write_nifti(outputs.add(c.out + "_sigma2.nii.gz"), fit.sigma2);
  write_nifti(outputs.add(c.out + "_ar.nii.gz"), fit.rho);
  {
    ImageHeader h = bold.header();
    h.num_volumes = 1;
    Image m(h);
    std::copy(mask.begin(), mask.end(), m.data().begin());
    write_nifti(outputs.add(c.out + "_mask.nii.gz"), m);
  }
  fmt::print(
      "glm: {} volumes, {} columns (rank {}), AR({}) noise, {} Cochrane-Orcutt fit(s), AR maps smoothed {} mm, "
      "data smoothed {} mm, {} residual dof\n",
      bold.nt(), design.x.cols(), fit.model.rank, ar.order, ar.iterations, ar.ar_fwhm_mm, c.fwhm, fit.model.dof);
  nlohmann::json summary{{"bold", c.bold},
                         {"events", c.events},
                         {"tr_s", options.tr_s},
                         {"columns", design.names()},
                         {"rank", fit.model.rank},
                         {"dof", fit.model.dof},
                         {"noise", c.noise},
                         {"ar_iterations", ar.iterations},
                         {"ar_fwhm_mm", ar.ar_fwhm_mm},
                         {"fwhm_mm", c.fwhm},
                         {"contrasts", nlohmann::json::array()}};
  const size_t volume = static_cast<size_t>(bold.header().voxels_per_volume());
  for (size_t k = 0; k < contrasts.size(); ++k) {
    const GlmContrast& con = contrasts[k];
    const std::string base = c.out + "_contrast-" + file_safe(con.name);
    nlohmann::json entry{{"name", con.name}, {"estimable", bool(fit.model.statistics[k].estimable)}};
    if (!fit.model.statistics[k].estimable) spdlog::warn("contrast {} is not estimable from this design", con.name);
    if (!con.is_f()) {
      ImageHeader h = bold.header();
      h.num_volumes = 1;
      Image effect(h, std::numeric_limits<float>::quiet_NaN());
      for (size_t v = 0; v < volume; ++v) {
        double e = 0.0;
        for (Eigen::Index j = 0; j < con.weights.cols(); ++j) {
          e += con.weights(0, j) * fit.beta.data()[static_cast<size_t>(j) * volume + v];
        }
        effect.data()[v] = static_cast<float>(e);
      }
      write_nifti(outputs.add(base + "_stat-effect.nii.gz"), effect);
      write_nifti(outputs.add(base + "_stat-t.nii.gz"), fit.statistics[k]);
      const auto [above, peak] = summarize(fit.statistics[k], c.threshold, true);
      fmt::print("  {} (t): max |t| {:.2f}, {} voxels with |t| > {}\n", con.name, peak, above, c.threshold);
      entry.update({{"type", "t"}, {"max_abs_t", peak}, {"voxels_above", above}});
    } else {
      write_nifti(outputs.add(base + "_stat-F.nii.gz"), fit.statistics[k]);
      const auto [above, peak] = summarize(fit.statistics[k], c.threshold * c.threshold, false);
      fmt::print("  {} (F): max F {:.2f}, {} voxels with F > {:.2f}\n", con.name, peak, above,
                 c.threshold * c.threshold);
      entry.update({{"type", "F"}, {"max_f", peak}});
    }
    summary["contrasts"].push_back(entry);
  }
  if (c.permutations > 0) {
    FirstLevelPermutationOptions po;
    po.ar = ar;
    po.fwhm_mm = c.fwhm;
    po.kind = c.permute_mode == "signflip" ? PermutationKind::kSignFlip : PermutationKind::kPermute;
    po.permutations = c.permutations;
    po.seed = c.seed;
    const auto wants = [&](const char* name) {
      return std::find(c.inference.begin(), c.inference.end(), name) != c.inference.end();
    };
    po.cluster_extent = wants("cluster-extent");
    po.cluster_mass = wants("cluster-mass");
    po.tfce = wants("tfce");
    po.cluster_threshold = c.cluster_threshold;
    po.connectivity = c.connectivity;
    po.tfce_E = c.tfce_e;
    po.tfce_H = c.tfce_h;
    po.max_batch = c.batch;
    const cli::Stopwatch perm_clock;
    cli::ProgressLog log("permutations");
    const auto progress = [&](int done, int total) { log(done, total); };
    const FirstLevelPermutationResult r =
        first_level_permutation_test(device, bold, design.x, contrasts, mask, po, progress);
    const ImageHeader& grid = bold.header();
    const std::vector<int64_t> voxels(r.voxels.begin(), r.voxels.end());
    for (size_t k = 0; k < contrasts.size(); ++k) {
      const FirstLevelContrastResult& cr = r.contrasts[k];
      const std::string base = c.out + "_contrast-" + file_safe(contrasts[k].name);
      cli::write_voxel_values(outputs.add(base + "_vox_corrp.nii.gz"), grid, voxels, cr.vox_corrp);
      rtf::write_null_distribution(outputs.add(base + "_null_vox.txt"), cr.max_null);
      size_t significant = 0;
      for (double x : cr.vox_corrp) significant += x >= 0.95 ? 1 : 0;
      nlohmann::json inference{{"permutations", r.count},
                               {"exhaustive", r.exhaustive},
                               {"mode", c.permute_mode},
                               {"seed", c.seed},
                               {"fwe_voxels", significant}};
      if (!cr.clustere_corrp.empty()) {
        cli::write_voxel_values(outputs.add(base + "_clustere_corrp.nii.gz"), grid, voxels, cr.clustere_corrp);
        rtf::write_null_distribution(outputs.add(base + "_null_clustere.txt"), cr.max_extent);
      }
      if (!cr.clusterm_corrp.empty()) {
        cli::write_voxel_values(outputs.add(base + "_clusterm_corrp.nii.gz"), grid, voxels, cr.clusterm_corrp);
        rtf::write_null_distribution(outputs.add(base + "_null_clusterm.txt"), cr.max_mass);
      }
      if (!cr.max_extent.empty()) {
        inference["cluster_threshold"] = c.cluster_threshold;
        inference["clusters"] = cr.clusters;
      }
      if (!cr.tfce.empty()) {
        cli::write_voxel_values(outputs.add(base + "_tfce.nii.gz"), grid, voxels,
                                std::vector<double>(cr.tfce.begin(), cr.tfce.end()));
        cli::write_voxel_values(outputs.add(base + "_tfce_corrp.nii.gz"), grid, voxels, cr.tfce_corrp);
        rtf::write_null_distribution(outputs.add(base + "_null_tfce.txt"), cr.max_tfce);
        inference["tfce_dh"] = cr.dh;
      }
      fmt::print("  {}: {} voxel(s) at FWE p <= 0.05 of {} permutations\n", contrasts[k].name, significant, r.count);
      summary["contrasts"][k]["permutation"] = inference;
    }
    summary["permutation_seconds"] = perm_clock.seconds();
  }
  summary["seconds"] = clock.seconds();
  write_text_atomically(outputs.add(c.out + "_glm.json"), summary.dump(2) + "\n");
  outputs.commit();
  fmt::print("wrote {}_design.tsv, _beta, _sigma2, _ar, _mask, _contrast-*.nii.gz, _glm.json ({:.2f} s)\n", c.out,
             clock.seconds());
}

void run(const GlmCli& c, const rtf::cli::GlobalOptions& globals) {
  using namespace rtf;
  const cli::Stopwatch clock;
  if (ar_order(c) > 0 && c.ar1 != 0.0)
    throw std::invalid_argument("--ar1 fixes an AR(1) coefficient: not with --noise");
  if (c.bayes && (c.ar1 != 0.0 || c.permutations > 0 || c.fwhm > 0)) {
    throw std::invalid_argument(
        "--bayes samples its own AR noise (--noise ar1..ar4): not with --ar1, --permutations or --fwhm");
  }
  if (c.bayes && c.noise_given && ar_order(c) == 0) {
    throw std::invalid_argument(
        "--bayes --noise ols: the Bayesian GLM samples AR(1) .. AR(4) noise (--noise ar1..ar4)");
  }
  if (!c.bayes && ar_order(c) == 0 && (c.permutations > 0 || c.fwhm > 0)) {
    throw std::invalid_argument("--permutations and --fwhm need --noise ar1..ar4");
  }
  if (c.permutations == 1)
    throw std::invalid_argument("--permutations 1: a permutation test needs at least 2 permutations");
  for (const std::string& i : c.inference) {
    if (i != "voxel" && i != "cluster-extent" && i != "cluster-mass" && i != "tfce") {
      throw std::invalid_argument(fmt::format("--inference {}: voxel, cluster-extent, cluster-mass or tfce", i));
    }
  }
  cli::WorkersOpening opening(globals);                               // while the inputs are read
  const Image bold = read_nifti(Ranks::world().local_input(c.bold));  // under mpirun: rank 0's file
  if (bold.nt() < 3) throw std::invalid_argument(fmt::format("{}: a GLM needs a 4D series", c.bold));
  const EventsTable events = read_events_tsv(Ranks::world().local_input(c.events));
  const DesignOptions options = design_options(c, bold);
  const DesignMatrix design = build_design_matrix(events.events, options);
  std::vector<GlmContrast> contrasts;
  for (const std::string& spec : c.contrasts) {
    const NamedContrast n = parse_named_contrast(spec, design.names());
    contrasts.push_back({n.name, n.weights});
  }
  Workers workers = opening.get();  // --devices: spread by --bayes; the other fits use the first
  Device* device = &workers.device(0);
  if (!c.bayes && !workers.root()) return;  // only --bayes spreads over ranks: the other fits run on rank 0 alone
  std::optional<std::vector<uint8_t>> mask;
  if (!c.mask.empty()) {
    const Image m = read_nifti(Ranks::world().local_input(c.mask));
    cli::require_same_grid(bold.header(), c.bold, m.header(), c.mask);
    std::vector<uint8_t> inside(m.volume(0).size());
    std::transform(m.volume(0).begin(), m.volume(0).end(), inside.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
    mask = std::move(inside);
  } else if (!c.no_mask) {
    mask = compute_brain_mask(*device, bold, {.volume = -1}).inside;
  }
  if (ar_order(c) > 0 && !c.bayes) {
    std::vector<uint8_t> inside =
        mask ? *mask : std::vector<uint8_t>(static_cast<size_t>(bold.header().voxels_per_volume()), 1);
    run_ar(c, *device, bold, design, options, contrasts, inside, clock);
    return;
  }
  if (c.bayes) {
    const std::vector<uint8_t> inside =
        mask ? *mask : std::vector<uint8_t>(static_cast<size_t>(bold.header().voxels_per_volume()), 1);
    std::vector<std::string> files;
    for (const GlmContrast& con : contrasts) files.push_back(file_safe(con.name));
    cli::BayesGlmCli b = c.bayes_options;
    b.seed = c.seed;
    b.order = std::max(1, ar_order(c));
    fmt::print("glm --bayes: {} volumes, {} columns, AR({}) noise, {} chain(s) of {} draws after {} burn-in\n",
               bold.nt(), design.x.cols(), b.order, b.chains, b.draws, b.burn_in);
    io::OutputSet outputs;  // rank 0's files, committed by run_bayes_glm when all are written
    if (workers.root()) write_design(outputs.add(c.out + "_design.tsv"), design);
    run_bayes_glm(b, workers, bold, design, contrasts, files, inside, c.out, outputs);
    if (!workers.root()) return;  // rank 0 writes
    fmt::print(
        "wrote {}_design.tsv, _contrast-*_stat-{{postmean,postsd,ppm}}.nii.gz, _sigma2_postmean, _ar_postmean, "
        "_glm.json ({:.2f} s)\n",
        c.out, clock.seconds());
    return;
  }
  const SeriesGlmResult r = fit_series_glm(*device, bold, design, contrasts, c.ar1, mask);
  io::OutputSet outputs;  // every file under its final name only when all are written
  write_design(outputs.add(c.out + "_design.tsv"), design);
  write_nifti(outputs.add(c.out + "_beta.nii.gz"), r.beta);
  write_nifti(outputs.add(c.out + "_sigma2.nii.gz"), r.sigma2);
  if (mask) {
    ImageHeader h = bold.header();
    h.num_volumes = 1;
    Image m(h);
    std::copy(mask->begin(), mask->end(), m.data().begin());
    write_nifti(outputs.add(c.out + "_mask.nii.gz"), m);
  }
  fmt::print("glm: {} volumes, {} columns (rank {}), {} residual dof{}\n", bold.nt(), design.x.cols(), r.model.rank,
             r.model.dof, c.ar1 != 0.0 ? fmt::format(", AR(1) {}", c.ar1) : "");
  nlohmann::json summary{
      {"bold", c.bold},       {"events", c.events}, {"tr_s", options.tr_s}, {"columns", design.names()},
      {"rank", r.model.rank}, {"dof", r.model.dof}, {"ar1", c.ar1},         {"contrasts", nlohmann::json::array()}};
  size_t kt = 0, kf = 0;
  for (const GlmContrast& con : contrasts) {
    const std::string base = c.out + "_contrast-" + file_safe(con.name);
    nlohmann::json entry{{"name", con.name}};
    if (!con.is_f()) {
      if (!r.model.t_estimable[kt]) spdlog::warn("contrast {} is not estimable from this design", con.name);
      write_nifti(outputs.add(base + "_stat-effect.nii.gz"), r.contrast[kt]);
      write_nifti(outputs.add(base + "_stat-t.nii.gz"), r.t[kt]);
      const auto [above, peak] = summarize(r.t[kt], c.threshold, true);
      fmt::print("  {} (t): max |t| {:.2f}, {} voxels with |t| > {}\n", con.name, peak, above, c.threshold);
      entry.update(
          {{"type", "t"}, {"max_abs_t", peak}, {"voxels_above", above}, {"estimable", bool(r.model.t_estimable[kt])}});
      ++kt;
    } else {
      write_nifti(outputs.add(base + "_stat-F.nii.gz"), r.f[kf]);
      const auto [above, peak] = summarize(r.f[kf], c.threshold * c.threshold, false);
      fmt::print("  {} (F, {} and {} dof): max F {:.2f}, {} voxels with F > {:.2f}\n", con.name, r.model.f_dof[kf],
                 r.model.dof, peak, above, c.threshold * c.threshold);
      entry.update({{"type", "F"}, {"max_f", peak}, {"numerator_dof", r.model.f_dof[kf]}});
      ++kf;
    }
    summary["contrasts"].push_back(entry);
  }
  write_text_atomically(outputs.add(c.out + "_glm.json"), summary.dump(2) + "\n");
  outputs.commit();
  fmt::print("wrote {}_design.tsv, _beta, _sigma2, _mask, _contrast-*_stat-*.nii.gz, _glm.json ({:.2f} s)\n", c.out,
             clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto c = std::make_shared<GlmCli>();
  auto* cmd = app.add_subcommand("glm", "First-level GLM of a 4D NIfTI with SPM's design (docs/algorithms/glm.md)");
  cmd->add_option("BOLD", c->bold, "4D NIfTI")->required()->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--events", c->events, "BIDS events.tsv (onset, duration, trial_type[, modulation])")
      ->required()
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--contrast", c->contrasts,
                  "NAME=EXPR over the design's columns, e.g. faces-houses=faces-houses; 'a; b' makes an F contrast "
                  "(repeatable)")
      ->required();
  cmd->add_option("--out", c->out,
                  "Output prefix: PREFIX_design.tsv, _beta.nii.gz, _sigma2.nii.gz, _mask.nii.gz, "
                  "_contrast-NAME_stat-{effect,t,F}.nii.gz, _glm.json")
      ->required();
  cmd->add_option("--tr", c->tr_s, "TR in seconds (default: the header's)")->check(rtf::cli::positive());
  cmd->add_option("--derivatives", c->derivatives, "HRF basis: canonical, + temporal, + temporal and dispersion")
      ->check(CLI::IsMember({"none", "temporal", "dispersion"}))
      ->capture_default_str();
  cmd->add_option("--highpass", c->highpass_s, "SPM DCT high-pass cutoff in seconds (0: no drift terms)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--poly", c->poly, "Legendre drift of this order instead of the DCT")->check(CLI::Range(0, 10));
  cmd->add_option("--microtime-onset", c->microtime_onset,
                  "SPM's fMRI_T0 (1..16): the bin at which regressors are sampled")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--confounds", c->confounds, "Extra regressors: FSL .par, rtfmri _fd.tsv or a tsv with a header")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_option("--confound-columns", c->confound_columns, "Use only these columns of --confounds (by name)");
  cmd->add_option("--ar1", c->ar1, "AR(1) prewhitening with this coefficient (e.g. 0.2, SPM's global prior); 0: OLS")
      ->check(CLI::Range(-0.99, 0.99))
      ->capture_default_str();
  cmd->add_option("--mask", c->mask, "Fit only inside this mask (default: a brain mask of the mean volume)")
      ->check(rtf::cli::existing_file_on_rank_zero());
  cmd->add_flag("--no-mask", c->no_mask, "Fit every voxel");
  cmd->add_option("--threshold", c->threshold, "|t| threshold for the printed summary (F: its square)")
      ->capture_default_str();
  cmd->add_option("--noise", c->noise,
                  "ols, or arP (P = 1..4): per-voxel AR(P) by Cochrane-Orcutt as statsmodels' GLSAR, AR maps smoothed "
                  "(BROCCOLI's ar4); also writes PREFIX_ar.nii.gz (docs/algorithms/glm_ar.md). With --bayes: the "
                  "sampled AR(P) noise (default ar1)")
      ->check(CLI::IsMember({"ols", "ar1", "ar2", "ar3", "ar4"}))
      ->capture_default_str();
  cmd->add_option("--ar-iterations", c->ar_iterations, "Cochrane-Orcutt fits (GLSAR's maxiter)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd->add_option("--ar-fwhm", c->ar_fwhm, "FWHM in mm of the AR maps' smoothing inside the mask (0: none)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--fwhm", c->fwhm,
                  "Smooth the data (inside the mask) before the AR fit, and every permutation's surrogate likewise "
                  "(mm; 0: none)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--permutations", c->permutations,
                  "First-level permutation test with N rearrangements (Eklund et al. 2012: whiten, permute, re-colour, "
                  "smooth, fit); needs --noise arP")
      ->check(CLI::Range(0, 10000000));
  cmd->add_option("--inference", c->inference,
                  "voxel, cluster-extent, cluster-mass, tfce (repeatable): PREFIX_contrast-NAME_{vox,clustere,clusterm,"
                  "tfce}_corrp.nii.gz (1 - FWE p) and _null_*.txt")
      ->capture_default_str();
  cmd->add_option("--cluster-threshold", c->cluster_threshold, "Cluster-forming t for cluster inference")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--permute-mode", c->permute_mode,
                  "Rearrange the whitened residuals' time points, or flip their signs")
      ->check(CLI::IsMember({"permute", "signflip"}))
      ->capture_default_str();
  cmd->add_option("--seed", c->seed, "Seed of the permutations (the same seed, the same permutations on every device)")
      ->capture_default_str();
  cmd->add_option("--tfce-e", c->tfce_e, "TFCE extent exponent E")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--tfce-h", c->tfce_h, "TFCE height exponent H")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--connectivity", c->connectivity, "Cluster and TFCE neighbourhood: 6, 18 or 26")
      ->check(CLI::IsMember({6, 18, 26}))
      ->capture_default_str();
  cmd->add_flag("--bayes", c->bayes,
                "Bayesian GLM: Gibbs sampler over beta, sigma^2 and AR(P) rho (--noise ar1..ar4, default ar1) with "
                "BROCCOLI's priors; writes each t contrast's posterior mean, SD and PPM P(c'beta > 0), sigma^2's and "
                "rho's posterior means (PREFIX_ar_postmean: 4D, one volume per coefficient, for P > 1), and "
                "split-R-hat / ESS in PREFIX_glm.json (docs/algorithms/bayes_glm.md; --seed seeds the chains). Spreads "
                "blocks of voxels over --devices and the ranks of `mpirun -np K rtfmri glm ... --bayes` with the same "
                "results (docs/scale.md)");
  cmd->add_option("--draws", c->bayes_options.draws, "--bayes: kept draws per chain")
      ->check(CLI::Range(32, 10000000))
      ->capture_default_str();
  cmd->add_option("--burn-in", c->bayes_options.burn_in, "--bayes: steps dropped at the start of each chain")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  cmd->add_option("--chains", c->bayes_options.chains, "--bayes: chains per voxel (split-R-hat needs >= 1; 2+ advised)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--chunk-voxels", c->bayes_options.chunk_voxels,
                  "--bayes: voxels per block handed to a device of --devices or an mpirun rank (0: 4 blocks per "
                  "device, at least 256; the results do not depend on it)")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--batch", c->batch, "Surrogate data sets per device launch (memory: batch x the series x 3)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->callback([c, cmd, &globals] {
    c->noise_given = cmd->count("--noise") > 0;
    run(*c, globals);
  });
}

RTF_REGISTER_COMMAND(66, setup);

}  // namespace
