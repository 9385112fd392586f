// run_decode_command: inputs read and checked, samples labelled and folds made before the device opens; the features
// built on the device; the folds fitted in the primal (p <= n) or from the device's Gram matrix; the final model fitted
// to every sample and its weights back-projected on the device; the permutation test; the files committed together.
#include "core/decoding/decode_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>

#include "core/decoding/cross_validation.hpp"
#include "core/decoding/decode_outputs.hpp"
#include "core/decoding/decoding_permutation.hpp"
#include "core/decoding/feature_weights.hpp"
#include "core/decoding/gram_matrix.hpp"
#include "core/decoding/sample_space.hpp"
#include "core/design/events.hpp"
#include "core/image/same_grid.hpp"
#include "core/io/nifti_io.hpp"
#include "core/mask/brain_mask.hpp"
#include "core/mask/masked_voxels.hpp"
#include "core/util/progress_log.hpp"
#include "core/util/stopwatch.hpp"

namespace rtf {

namespace {

std::vector<Image> read_runs(const DecodeOptions& o) {
  if (o.bold.empty()) throw std::invalid_argument("decode: no BOLD run given");
  if (o.events.size() != o.bold.size()) {
    throw std::invalid_argument(
        fmt::format("--events: {} file(s) for {} run(s): give one events file per BOLD run, in the same order",
                    o.events.size(), o.bold.size()));
  }
  std::vector<Image> runs;
  for (const std::string& path : o.bold) {
    Image run = read_nifti(path);
    if (run.nt() < 3)
      throw std::invalid_argument(fmt::format("{}: {} volume(s): a run needs 3 or more", path, run.nt()));
    if (!runs.empty()) require_same_grid(runs.front().header(), o.bold.front(), run.header(), path);
    if (o.tr_s > 0) run.header().tr_s = o.tr_s;
    if (!(run.header().tr_s > 0)) throw std::invalid_argument(fmt::format("{}: no TR in the header; give --tr", path));
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<uint8_t> feature_mask(const DecodeOptions& o, const Image& first, Device& device) {
  if (o.mask.empty()) {
    if (!o.mask_labels.empty()) throw std::invalid_argument("--mask-labels needs --mask");
    return compute_brain_mask(device, first, {.volume = -1}).inside;
  }
  const Image m = read_nifti(o.mask);
  require_same_grid(first.header(), o.bold.front(), m.header(), o.mask);
  const std::set<int> wanted(o.mask_labels.begin(), o.mask_labels.end());
  std::vector<uint8_t> inside(m.volume(0).size());
  std::transform(m.volume(0).begin(), m.volume(0).end(), inside.begin(), [&](float v) -> uint8_t {
    if (!std::isfinite(v) || v == 0.0f) return 0;
    return wanted.empty() || wanted.contains(static_cast<int>(std::lround(v))) ? 1 : 0;
  });
  if (std::none_of(inside.begin(), inside.end(), [](uint8_t b) { return b != 0; })) {
    throw std::invalid_argument(o.mask_labels.empty() ? fmt::format("{}: the mask is empty", o.mask)
                                                      : fmt::format("{}: no voxel has the --mask-labels", o.mask));
  }
  return inside;
}

// What each fold leaves out, and the check that its training samples hold every class.
std::vector<std::string> fold_names(const std::vector<std::vector<int>>& folds, const DecodingSamples& s,
                                    CvScheme scheme) {
  std::vector<std::string> names;
  for (size_t f = 0; f < folds.size(); ++f) {
    const std::vector<int>& test = folds[f];
    const int first = test.front();
    if (scheme == CvScheme::kLeaveOneRunOut) {
      names.push_back(fmt::format("run {}", s.run[static_cast<size_t>(first)] + 1));
    } else if (scheme == CvScheme::kBlocks) {
      names.push_back(fmt::format("block {}", s.block[static_cast<size_t>(first)] + 1));
    } else {
      names.push_back(fmt::format("samples {}-{}", first, test.back()));
    }
    std::vector<int64_t> left = s.class_counts();
    for (const int i : test) --left[static_cast<size_t>(s.label[static_cast<size_t>(i)])];
    for (size_t c = 0; c < left.size(); ++c) {
      if (left[c] == 0) {
        throw std::invalid_argument(
            fmt::format("--cv: fold {} ({}) leaves no '{}' sample to train on; choose another --cv or more runs", f + 1,
                        names.back(), s.classes[c]));
      }
    }
  }
  return names;
}

nlohmann::json settings_json(const DecodeOptions& o, DecoderModel model) {
  nlohmann::json preprocessing = {
      {"detrend_poly_order", o.features.poly_order ? nlohmann::json(*o.features.poly_order) : nlohmann::json()},
      {"highpass_cutoff_s",
       o.features.highpass_cutoff_s ? nlohmann::json(*o.features.highpass_cutoff_s) : nlohmann::json()},
      {"zscore", o.features.zscore ? "per run" : "none"},
      {"lag_s", o.labels.lag_s},
      {"rest", o.labels.rest}};
  nlohmann::json solver = {{"tolerance", o.solver.tolerance}, {"max_iterations", o.solver.max_iterations}};
  if (model == DecoderModel::kRidge) {
    solver["alpha"] = o.solver.alpha;
  } else {
    solver["C"] = o.solver.c;
  }
  if (model == DecoderModel::kSvmHinge || model == DecoderModel::kSvmSquaredHinge) {
    solver["intercept_scaling"] = o.solver.intercept_scaling;
  }
  return {
      {"model", decoder_model_name(model)}, {"cv", o.cv},      {"runs", o.bold}, {"events", o.events}, {"mask", o.mask},
      {"preprocessing", preprocessing},     {"solver", solver}};
}

}  // namespace

void run_decode_command(const DecodeOptions& o, const DeviceOpener& open_device) {
  const Stopwatch clock;
  Stopwatch phase;
  DecodeResult r;
  r.model = decoder_model(o.model, o.loss);
  const CvScheme scheme = cv_scheme(o.cv);
  if (o.permutations == 1) throw std::invalid_argument("--permutations 1: a permutation test needs at least 2");
  std::vector<Image> runs = read_runs(o);
  std::vector<DecodingRun> labelled;
  for (size_t i = 0; i < runs.size(); ++i) {
    labelled.push_back({runs[i].nt(), runs[i].header().tr_s, read_events_tsv(o.events[i]).events});
  }
  r.samples = label_volumes(labelled, o.labels);
  const DecodingSamples& s = r.samples;
  const std::vector<std::vector<int>> folds = cv_folds(scheme, s, o.folds);
  r.fold_names = fold_names(folds, s, scheme);
  r.timing["read"] = phase.seconds();

  phase = Stopwatch();
  const std::unique_ptr<Device> device = open_device();
  const std::vector<uint8_t> mask = feature_mask(o, runs.front(), *device);
  const std::vector<int> voxels = masked_voxels(mask);
  r.grid = runs.front().header();
  r.grid.num_volumes = 1;
  std::vector<const Image*> run_pointers;
  run_pointers.reserve(runs.size());
  for (const Image& run : runs) run_pointers.push_back(&run);
  const SampleFeatures x = sample_features(*device, run_pointers, voxels, s, o.features);
  const int64_t n = x.samples, p = x.features;
  const int classes = static_cast<int>(s.classes.size());
  fmt::print("decode: {} run(s), {} samples ({}), {} features{}, {} folds ({}), model {}\n", runs.size(), n,
             fmt::join(s.classes, "/"), p,
             x.constant_features > 0 ? fmt::format(" ({} constant in some run)", x.constant_features) : "",
             folds.size(), o.cv, decoder_model_name(r.model));
  device->finish();
  r.timing["features"] = phase.seconds();

  phase = Stopwatch();
  const bool dual = p > n;
  const SampleSpace space = [&] {
    if (dual) return SampleSpace::dual(gram_matrix(*device, x.x, n, p));
    std::vector<float> host(static_cast<size_t>(n * p));
    x.x.read(device->queue(), host);
    Eigen::MatrixXd features(n, p);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t f = 0; f < p; ++f) features(i, f) = host[static_cast<size_t>(i * p + f)];
    }
    return SampleSpace::primal(std::move(features));
  }();
  r.timing[dual ? "gram" : "download"] = phase.seconds();

  phase = Stopwatch();
  const PreparedFolds prepared = prepare_folds(space, folds);
  for (const std::vector<int>& train : prepared.train) r.fold_train_sizes.push_back(static_cast<int64_t>(train.size()));
  r.cv = cross_validate(r.model, o.solver, prepared, s.label, classes);
  r.timing["cross_validation"] = phase.seconds();

  phase = Stopwatch();
  std::vector<int> every(static_cast<size_t>(n));
  std::iota(every.begin(), every.end(), 0);
  const SampleSpace::Fold all = space.fold(every, {});
  const LinearFit fit = fit_linear_model(r.model, all.train, s.label, classes, o.solver);
  r.final_converged = fit.converged;
  r.final_iterations = fit.iterations;
  DecoderModelFile& m = r.final_model;
  m.model = r.model;
  m.classes = s.classes;
  m.dims = {r.grid.dims[0], r.grid.dims[1], r.grid.dims[2]};
  m.affine = r.grid.affine;
  m.voxels = voxels;
  m.coef = dual ? feature_weights(*device, x.x, n, p, all.to_samples * fit.coef) : fit.coef;
  m.intercept = fit.intercept;
  m.detrend_poly_order = o.features.poly_order;
  m.highpass_cutoff_s = o.features.highpass_cutoff_s;
  m.scaling = o.features.zscore ? FeatureScaling::kPerRun : FeatureScaling::kNone;
  m.lag_s = o.labels.lag_s;
  m.rest = o.labels.rest;
  r.timing["final_model"] = phase.seconds();

  std::optional<DecodingPermutations> null;
  if (o.permutations > 0) {
    phase = Stopwatch();
    ProgressLog progress("decode: permutations");
    null = permutation_test(r.model, o.solver, prepared, s.label, classes, s.run, o.permutations, o.seed,
                            [&](int64_t done, int64_t total) { progress(done, total); });
    r.permutations = &*null;
    r.timing["permutations"] = phase.seconds();
  }
  r.settings = settings_json(o, r.model);
  r.settings["seed"] = o.seed;
  m.training = {{"samples", s.size()},
                {"class_counts", s.class_counts()},
                {"cv", o.cv},
                {"cv_accuracy", r.cv.mean_accuracy},
                {"cv_balanced_accuracy", r.cv.mean_balanced_accuracy},
                {"solver", r.settings["solver"]},
                {"runs", o.bold}};

  phase = Stopwatch();
  io::OutputSet outputs;
  write_decode_files(r, o.out, outputs);
  outputs.commit();
  r.timing["write"] = phase.seconds();
  int unconverged = 0;
  for (const FoldScore& f : r.cv.folds) unconverged += f.converged ? 0 : 1;
  fmt::print("decode: accuracy {:.4f}, balanced accuracy {:.4f} over {} folds{}{}\n", r.cv.mean_accuracy,
             r.cv.mean_balanced_accuracy, r.cv.folds.size(),
             unconverged > 0 ? fmt::format(" ({} fold(s) stopped at --max-iterations)", unconverged) : "",
             null ? fmt::format(", permutation p = {:.4g} ({} permutations{})", null->p_value, null->null.size(),
                                null->exhaustive ? ", all distinct" : "")
                  : "");
  fmt::print(
      "wrote {}_predictions.tsv, _folds.tsv, _confusion.tsv, _weights.nii.gz, _model.json, _decode.json{} ({:.2f} s)\n",
      o.out, null ? ", _null_accuracy.txt" : "", clock.seconds());
}

}  // namespace rtf
