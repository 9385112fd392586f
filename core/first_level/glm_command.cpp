// run_glm: options checked, the devices opened while the series, events and design are read, the mask, then one of the
// three fits: the AR(P) GLM (with its permutation test), the Bayesian GLM spread over devices and ranks, or the series
// GLM. Only the Bayesian GLM spreads: the other fits run on rank 0 alone.
#include "core/first_level/glm_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/design/confounds.hpp"
#include "core/design/contrast.hpp"
#include "core/design/design_matrix.hpp"
#include "core/design/events.hpp"
#include "core/first_level/glm_ar.hpp"
#include "core/first_level/glm_ols.hpp"
#include "core/first_level/glm_outputs.hpp"
#include "core/image/same_grid.hpp"
#include "core/io/nifti_io.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/scale/scale_out.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

namespace {

void check_glm_options(const GlmOptions& c) {
  if (c.ar_order() > 0 && c.ar1 != 0.0)
    throw std::invalid_argument("--ar1 fixes an AR(1) coefficient: not with --noise");
  if (c.bayes && (c.ar1 != 0.0 || c.permutations > 0 || c.fwhm > 0)) {
    throw std::invalid_argument(
        "--bayes samples its own AR noise (--noise ar1..ar4): not with --ar1, --permutations or --fwhm");
  }
  if (c.bayes && c.noise_given && c.ar_order() == 0) {
    throw std::invalid_argument(
        "--bayes --noise ols: the Bayesian GLM samples AR(1) .. AR(4) noise (--noise ar1..ar4)");
  }
  if (!c.bayes && c.ar_order() == 0 && (c.permutations > 0 || c.fwhm > 0)) {
    throw std::invalid_argument("--permutations and --fwhm need --noise ar1..ar4");
  }
  if (c.permutations == 1)
    throw std::invalid_argument("--permutations 1: a permutation test needs at least 2 permutations");
  for (const std::string& i : c.inference) {
    if (i != "voxel" && i != "cluster-extent" && i != "cluster-mass" && i != "tfce") {
      throw std::invalid_argument(fmt::format("--inference {}: voxel, cluster-extent, cluster-mass or tfce", i));
    }
  }
}

DesignOptions design_options(const GlmOptions& c, const Image& bold, const ScaleOut& scale) {
  DesignOptions o;
  o.tr_s = c.tr_s > 0 ? c.tr_s : bold.header().tr_s;
  if (!(o.tr_s > 0)) throw std::invalid_argument(fmt::format("{}: no TR in the header; give --tr", c.bold));
  o.n_scans = bold.nt();
  o.microtime_onset = c.microtime_onset;
  if (c.derivatives == "temporal") o.derivatives = HrfDerivatives::kTemporal;
  if (c.derivatives == "dispersion") o.derivatives = HrfDerivatives::kTemporalDispersion;
  if (c.poly >= 0) {
    o.drift = DriftModel::kPolynomial;
    o.polynomial_order = c.poly;
  } else if (c.highpass_s > 0) {
    o.drift = DriftModel::kCosine;
    o.highpass_cutoff_s = c.highpass_s;
  } else {
    o.drift = DriftModel::kNone;
  }
  if (!c.confounds.empty()) {
    const ConfoundTable t = read_confounds(scale.input(c.confounds), c.confound_columns);
    if (t.values.rows() != bold.nt()) {
      throw std::invalid_argument(
          fmt::format("{}: {} rows for a series of {} volumes", c.confounds, t.values.rows(), bold.nt()));
    }
    o.confounds = t.values;
    o.confound_names = t.names;
  }
  return o;
}

// --mask's non-zero voxels, else (without --no-mask) the brain mask of the mean volume; nothing: every voxel.
std::optional<std::vector<uint8_t>> fit_mask(const GlmOptions& c, const Image& bold, Device& device,
                                             const ScaleOut& scale) {
  if (!c.mask.empty()) {
    const Image m = read_nifti(scale.input(c.mask));
    require_same_grid(bold.header(), c.bold, m.header(), c.mask);
    std::vector<uint8_t> inside(m.volume(0).size());
    std::transform(m.volume(0).begin(), m.volume(0).end(), inside.begin(), [](float x) { return x != 0.0f ? 1 : 0; });
    return inside;
  }
  if (!c.no_mask) return compute_brain_mask(device, bold, {.volume = -1}).inside;
  return std::nullopt;
}

// --bayes: the Bayesian GLM over the devices and ranks; rank 0 writes.
void run_bayes(const GlmOptions& c, ScaleOut& scale, const Image& bold, const DesignMatrix& design,
               const std::vector<GlmContrast>& contrasts, const std::vector<uint8_t>& inside, const Stopwatch& clock) {
  std::vector<std::string> files;
  for (const GlmContrast& con : contrasts) files.push_back(file_safe(con.name));
  BayesGlmOptions b = c.bayes_options;
  b.seed = c.seed;
  b.order = std::max(1, c.ar_order());
  fmt::print("glm --bayes: {} volumes, {} columns, AR({}) noise, {} chain(s) of {} draws after {} burn-in\n", bold.nt(),
             design.x.cols(), b.order, b.chains, b.draws, b.burn_in);
  io::OutputSet outputs;  // rank 0's files, committed by run_bayes_glm when all are written
  if (scale.root()) write_design(outputs.add(c.out + "_design.tsv"), design);
  run_bayes_glm(b, scale, bold, design, contrasts, files, inside, c.out, outputs);
  if (!scale.root()) return;  // rank 0 writes
  fmt::print(
      "wrote {}_design.tsv, _contrast-*_stat-{{postmean,postsd,ppm}}.nii.gz, _sigma2_postmean, _ar_postmean, "
      "_glm.json ({:.2f} s)\n",
      c.out, clock.seconds());
}

}  // namespace

void run_glm(const GlmOptions& c, const DeviceChoice& devices) {
  const Stopwatch clock;
  check_glm_options(c);
  ScaleOut scale(devices);                             // the devices open while the inputs are read
  const Image bold = read_nifti(scale.input(c.bold));  // under mpirun: rank 0's file
  if (bold.nt() < 3) throw std::invalid_argument(fmt::format("{}: a GLM needs a 4D series", c.bold));
  const EventsTable events = read_events_tsv(scale.input(c.events));
  const DesignOptions options = design_options(c, bold, scale);
  const DesignMatrix design = build_design_matrix(events.events, options);
  std::vector<GlmContrast> contrasts;
  for (const std::string& spec : c.contrasts) {
    const NamedContrast n = parse_named_contrast(spec, design.names());
    contrasts.push_back({n.name, n.weights});
  }
  Device& device = scale.workers().device(0);  // --devices: spread by --bayes; the other fits use the first
  if (!c.bayes && !scale.root()) return;       // only --bayes spreads over ranks: the other fits run on rank 0 alone
  const std::optional<std::vector<uint8_t>> mask = fit_mask(c, bold, device, scale);
  const auto every_voxel = [&] {
    return mask ? *mask : std::vector<uint8_t>(static_cast<size_t>(bold.header().voxels_per_volume()), 1);
  };
  if (c.ar_order() > 0 && !c.bayes) {
    run_ar_glm(c, device, bold, design, options.tr_s, contrasts, every_voxel(), clock);
  } else if (c.bayes) {
    run_bayes(c, scale, bold, design, contrasts, every_voxel(), clock);
  } else {
    run_ols_glm(c, device, bold, design, options.tr_s, contrasts, mask, clock);
  }
}

}  // namespace rtf
