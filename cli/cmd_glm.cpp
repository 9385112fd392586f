// `rtfmri glm BOLD --events FILE --contrast NAME=EXPR --out PREFIX`: the first-level GLM of a 4D NIfTI with the live
// GLM's kernels: SPM's design from a BIDS events.tsv, optional confounds and AR(1) prewhitening; writes the design,
// betas, residual variance, mask and per contrast the estimate and t (or F) map. docs/algorithms/glm.md.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "core/design/confounds.hpp"
#include "core/design/contrast.hpp"
#include "core/design/design_matrix.hpp"
#include "core/glm/series_glm.hpp"
#include "core/io/nifti_io.hpp"
#include "core/mask/brain_mask.hpp"

namespace {

struct GlmCli {
  std::string bold, events, out, mask, confounds, derivatives = "none";
  std::vector<std::string> contrasts, confound_columns;
  double tr_s = 0.0, highpass_s = 128.0, ar1 = 0.0, threshold = 3.1;
  int poly = -1;
  int microtime_onset = 8;
  bool no_mask = false;
};

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
    const rtf::ConfoundTable t = rtf::read_confounds(c.confounds, c.confound_columns);
    if (t.values.rows() != bold.nt()) {
      throw std::invalid_argument(
          fmt::format("{}: {} rows for a series of {} volumes", c.confounds, t.values.rows(), bold.nt()));
    }
    o.confounds = t.values;
    o.confound_names = t.names;
  }
  return o;
}

void write_design(const std::string& path, const rtf::DesignMatrix& d) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  const auto names = d.names();
  for (size_t j = 0; j < names.size(); ++j) f << (j ? "\t" : "") << names[j];
  f << "\n";
  for (Eigen::Index t = 0; t < d.x.rows(); ++t) {
    for (Eigen::Index j = 0; j < d.x.cols(); ++j) f << (j ? "\t" : "") << fmt::format("{:.8g}", d.x(t, j));
    f << "\n";
  }
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

void run(const GlmCli& c, const rtf::cli::GlobalOptions& globals) {
  using namespace rtf;
  const cli::Stopwatch clock;
  const Image bold = read_nifti(c.bold);
  if (bold.nt() < 3) throw std::invalid_argument(fmt::format("{}: a GLM needs a 4D series", c.bold));
  const EventsTable events = read_events_tsv(c.events);
  const DesignOptions options = design_options(c, bold);
  const DesignMatrix design = build_design_matrix(events.events, options);
  std::vector<GlmContrast> contrasts;
  for (const std::string& spec : c.contrasts) {
    const NamedContrast n = parse_named_contrast(spec, design.names());
    contrasts.push_back({n.name, n.weights});
  }
  auto device = cli::open_device(globals);
  std::optional<std::vector<uint8_t>> mask;
  if (!c.mask.empty()) {
    const Image m = read_nifti(c.mask);
    cli::require_same_grid(bold.header(), c.bold, m.header(), c.mask);
    std::vector<uint8_t> inside(m.volume(0).size());
    std::transform(m.volume(0).begin(), m.volume(0).end(), inside.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
    mask = std::move(inside);
  } else if (!c.no_mask) {
    mask = compute_brain_mask(*device, bold, {.volume = -1}).inside;
  }
  const SeriesGlmResult r = fit_series_glm(*device, bold, design, contrasts, c.ar1, mask);
  write_design(c.out + "_design.tsv", design);
  write_nifti(c.out + "_beta.nii.gz", r.beta);
  write_nifti(c.out + "_sigma2.nii.gz", r.sigma2);
  if (mask) {
    ImageHeader h = bold.header();
    h.num_volumes = 1;
    Image m(h);
    std::copy(mask->begin(), mask->end(), m.data().begin());
    write_nifti(c.out + "_mask.nii.gz", m);
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
      write_nifti(base + "_stat-effect.nii.gz", r.contrast[kt]);
      write_nifti(base + "_stat-t.nii.gz", r.t[kt]);
      const auto [above, peak] = summarize(r.t[kt], c.threshold, true);
      fmt::print("  {} (t): max |t| {:.2f}, {} voxels with |t| > {}\n", con.name, peak, above, c.threshold);
      entry.update(
          {{"type", "t"}, {"max_abs_t", peak}, {"voxels_above", above}, {"estimable", bool(r.model.t_estimable[kt])}});
      ++kt;
    } else {
      write_nifti(base + "_stat-F.nii.gz", r.f[kf]);
      const auto [above, peak] = summarize(r.f[kf], c.threshold * c.threshold, false);
      fmt::print("  {} (F, {} and {} dof): max F {:.2f}, {} voxels with F > {:.2f}\n", con.name, r.model.f_dof[kf],
                 r.model.dof, peak, above, c.threshold * c.threshold);
      entry.update({{"type", "F"}, {"max_f", peak}, {"numerator_dof", r.model.f_dof[kf]}});
      ++kf;
    }
    summary["contrasts"].push_back(entry);
  }
  std::ofstream(c.out + "_glm.json") << summary.dump(2) << "\n";
  fmt::print("wrote {}_design.tsv, _beta, _sigma2, _mask, _contrast-*_stat-*.nii.gz, _glm.json ({:.2f} s)\n", c.out,
             clock.seconds());
}

void setup(CLI::App& app, rtf::cli::GlobalOptions& globals) {
  auto c = std::make_shared<GlmCli>();
  auto* cmd = app.add_subcommand("glm", "First-level GLM of a 4D NIfTI with SPM's design (docs/algorithms/glm.md)");
  cmd->add_option("BOLD", c->bold, "4D NIfTI")->required()->check(CLI::ExistingFile);
  cmd->add_option("--events", c->events, "BIDS events.tsv (onset, duration, trial_type[, modulation])")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--contrast", c->contrasts,
                  "NAME=EXPR over the design's columns, e.g. faces-houses=faces-houses; 'a; b' makes an F contrast "
                  "(repeatable)")
      ->required();
  cmd->add_option("--out", c->out,
                  "Output prefix: PREFIX_design.tsv, _beta.nii.gz, _sigma2.nii.gz, _mask.nii.gz, "
                  "_contrast-NAME_stat-{effect,t,F}.nii.gz, _glm.json")
      ->required();
  cmd->add_option("--tr", c->tr_s, "TR in seconds (default: the header's)")->check(CLI::PositiveNumber);
  cmd->add_option("--derivatives", c->derivatives, "HRF basis: canonical, + temporal, + temporal and dispersion")
      ->check(CLI::IsMember({"none", "temporal", "dispersion"}))
      ->capture_default_str();
  cmd->add_option("--highpass", c->highpass_s, "SPM DCT high-pass cutoff in seconds (0: no drift terms)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--poly", c->poly, "Legendre drift of this order instead of the DCT")->check(CLI::Range(0, 10));
  cmd->add_option("--microtime-onset", c->microtime_onset,
                  "SPM's fMRI_T0 (1..16): the bin at which regressors are sampled")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--confounds", c->confounds, "Extra regressors: FSL .par, rtfmri _fd.tsv or a tsv with a header")
      ->check(CLI::ExistingFile);
  cmd->add_option("--confound-columns", c->confound_columns, "Use only these columns of --confounds (by name)");
  cmd->add_option("--ar1", c->ar1, "AR(1) prewhitening with this coefficient (e.g. 0.2, SPM's global prior); 0: OLS")
      ->check(CLI::Range(-0.99, 0.99))
      ->capture_default_str();
  cmd->add_option("--mask", c->mask, "Fit only inside this mask (default: a brain mask of the mean volume)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--no-mask", c->no_mask, "Fit every voxel");
  cmd->add_option("--threshold", c->threshold, "|t| threshold for the printed summary (F: its square)")
      ->capture_default_str();
  cmd->callback([c, &globals] { run(*c, globals); });
}

RTF_REGISTER_COMMAND(66, setup);

}  // namespace
