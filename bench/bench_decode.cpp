// Decoder training benchmark (issue 38): training on `--volumes` volumes (two runs) x `--features` voxels, the issue's
// case 200 x 60,000 (whole brain at 2-3 mm), from the runs' series on the host to the weights over the voxels, as
// `rtfmri decode` does it: the features (upload, per-run linear detrending, z-scoring on the device), the Gram matrix
// on the device and its read-back, the eigendecomposition of the training set's Gram matrix (SampleSpace::fold), the
// fit in the span of the samples (each model), and the weights back-projected on the device. Also a 12-fold
// cross-validation (k-fold) of each model from the same Gram matrix. One JSON line per model: medians and p95 of each
// stage over --runs repetitions, and the whole training. Then the live decoder's step per TR (enqueue and read) at
// 64x64x33 with every voxel a feature, for 1 and 4 decision functions.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "bench/bench_stats.hpp"
#include "core/decoding/cross_validation.hpp"
#include "core/decoding/feature_weights.hpp"
#include "core/decoding/gram_matrix.hpp"
#include "core/decoding/live_decoder.hpp"
#include "core/decoding/sample_features.hpp"
#include "core/decoding/sample_space.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Options {
  std::string device;
  int64_t volumes = 200, features = 60000;
  int runs = 7;
};

// Two runs of volumes/2 volumes on a grid of `features` voxels (one row), noise plus a pattern in alternate blocks of
// 10 volumes, every volume a sample.
struct Data {
  std::vector<rtf::Image> runs;
  rtf::DecodingSamples samples;
  std::vector<int> voxels;
};

Data make_data(const Options& o) {
  Data d;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> pattern(static_cast<size_t>(o.features));
  for (float& v : pattern) v = normal(rng);
  d.samples.classes = {"a", "b"};
  for (int r = 0; r < 2; ++r) {
    rtf::ImageHeader h;
    h.dims = {o.features, 1, 1};
    h.num_volumes = o.volumes / 2;
    h.tr_s = 2.0;
    rtf::Image img(h);
    for (int64_t t = 0; t < h.num_volumes; ++t) {
      const int label = static_cast<int>((t / 10) % 2);
      for (int64_t v = 0; v < o.features; ++v) {
        img.volume(t)[static_cast<size_t>(v)] =
            1000.0f + 10.0f * normal(rng) + (label ? 0.5f : -0.5f) * pattern[static_cast<size_t>(v)];
      }
      d.samples.run.push_back(r);
      d.samples.volume.push_back(static_cast<int>(t));
      d.samples.label.push_back(label);
      d.samples.block.push_back(static_cast<int>(t / 10) + 100 * r);
    }
    d.runs.push_back(std::move(img));
  }
  d.voxels.resize(static_cast<size_t>(o.features));
  std::iota(d.voxels.begin(), d.voxels.end(), 0);
  return d;
}

void bench_model(rtf::Device& dev, const Options& o, const Data& d, rtf::DecoderModel model) {
  std::vector<const rtf::Image*> runs{&d.runs[0], &d.runs[1]};
  std::vector<double> features_ms, gram_ms, eigen_ms, fit_ms, weights_ms, total_ms, cv_ms;
  double accuracy = 0.0;
  int iterations = 0;
  for (int rep = 0; rep < o.runs + 1; ++rep) {  // the first repetition builds the kernels: not counted
    const auto t0 = Clock::now();
    rtf::SampleFeatures x = rtf::sample_features(dev, runs, d.voxels, d.samples, {});
    dev.finish();
    const double t_features = ms_since(t0);
    auto t = Clock::now();
    const rtf::SampleSpace space = rtf::SampleSpace::dual(rtf::gram_matrix(dev, x.x, x.samples, x.features));
    const double t_gram = ms_since(t);
    t = Clock::now();
    std::vector<int> every(static_cast<size_t>(x.samples));
    std::iota(every.begin(), every.end(), 0);
    const rtf::SampleSpace::Fold all = space.fold(every, {});
    const double t_eigen = ms_since(t);
    t = Clock::now();
    const rtf::LinearFit fit = rtf::fit_linear_model(model, all.train, d.samples.label, 2, {});
    const double t_fit = ms_since(t);
    t = Clock::now();
    const Eigen::MatrixXd w = rtf::feature_weights(dev, x.x, x.samples, x.features, all.to_samples * fit.coef);
    const double t_weights = ms_since(t);
    const double t_total = ms_since(t0);
    t = Clock::now();
    const rtf::PreparedFolds folds = rtf::prepare_folds(space, rtf::cv_folds(rtf::CvScheme::kKFold, d.samples, 12));
    accuracy = rtf::cross_validate(model, {}, folds, d.samples.label, 2).mean_accuracy;
    const double t_cv = ms_since(t);
    iterations = fit.iterations;
    if (rep == 0) continue;
    features_ms.push_back(t_features);
    gram_ms.push_back(t_gram);
    eigen_ms.push_back(t_eigen);
    fit_ms.push_back(t_fit);
    weights_ms.push_back(t_weights);
    total_ms.push_back(t_total);
    cv_ms.push_back(t_cv);
  }
  const auto stage = [](std::vector<double> ms) {
    const rtf::bench::Timing t = rtf::bench::summarize(std::move(ms));
    return nlohmann::json{{"median_ms", t.median}, {"p95_ms", t.p95}};
  };
  rtf::bench::print_line({{"bench", "decode_training"},
                          {"device", dev.info().device_name},
                          {"model", rtf::decoder_model_name(model)},
                          {"volumes", o.volumes},
                          {"features", o.features},
                          {"runs", o.runs},
                          {"train_total", stage(total_ms)},
                          {"features_upload_detrend_zscore", stage(features_ms)},
                          {"gram", stage(gram_ms)},
                          {"eigendecomposition", stage(eigen_ms)},
                          {"fit", stage(fit_ms)},
                          {"weights", stage(weights_ms)},
                          {"cv_12_fold", stage(cv_ms)},
                          {"fit_iterations", iterations},
                          {"cv_accuracy", accuracy}});
}

// The live decoder's step per TR at 64x64x33: every voxel of the grid a feature (135,168: more than any brain mask),
// M decision functions; a ring of 200 volumes, enqueue + read (the feedback path's wait) per volume.
void bench_live(rtf::Device& dev, int functions, int runs) {
  rtf::ImageHeader h;
  h.dims = {64, 64, 33};
  h.num_volumes = 1;
  rtf::DecoderModelFile m;
  m.model = rtf::DecoderModel::kLogistic;
  for (int c = 0; c < std::max(2, functions); ++c) m.classes.push_back(std::string(1, static_cast<char>('a' + c)));
  m.dims = {64, 64, 33};
  m.affine = h.affine;
  m.voxels.resize(64 * 64 * 33);
  std::iota(m.voxels.begin(), m.voxels.end(), 0);
  m.coef = Eigen::MatrixXd::Random(static_cast<Eigen::Index>(m.voxels.size()), functions);
  m.intercept = Eigen::VectorXd::Zero(functions);
  rtf::LiveDecoder decoder(dev, m, h);
  constexpr int kRing = 200;
  std::vector<float> volumes(static_cast<size_t>(kRing) * m.voxels.size());
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(1000.0f, 10.0f);
  for (float& v : volumes) v = normal(rng);
  rtf::DeviceBuffer<float> ring(dev, volumes.size());
  ring.write(dev.queue(), volumes);
  std::vector<double> ms;
  for (int t = 0; t < runs + 20; ++t) {
    const auto t0 = Clock::now();
    decoder.enqueue(ring, static_cast<size_t>(t % kRing) * m.voxels.size());
    const rtf::LiveDecision d = decoder.read();
    if (t >= 20) ms.push_back(ms_since(t0));
    if (!std::isfinite(d.decision.front())) throw std::runtime_error("bench_decode: a non-finite decision");
  }
  const rtf::bench::Timing t = rtf::bench::summarize(ms);
  rtf::bench::print_line({{"bench", "decoder_live_apply"},
                          {"device", dev.info().device_name},
                          {"grid", "64x64x33"},
                          {"features", m.voxels.size()},
                          {"decision_functions", functions},
                          {"volumes", runs},
                          {"median_ms", t.median},
                          {"p95_ms", t.p95}});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtfmri decoder training benchmark: JSON lines on stdout"};
  Options o;
  app.add_option("--device", o.device, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--volumes", o.volumes, "Volumes (samples), in two runs")
      ->check(CLI::Range(8, 100000))
      ->capture_default_str();
  app.add_option("--features", o.features, "Voxels (features)")->check(CLI::Range(1, 100000000))->capture_default_str();
  app.add_option("--runs", o.runs, "Timed repetitions")->check(CLI::PositiveNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::err);
  try {
    auto dev = rtf::Device::open(o.device);
    const Data d = make_data(o);
    for (const rtf::DecoderModel m : {rtf::DecoderModel::kLogistic, rtf::DecoderModel::kSvmSquaredHinge,
                                      rtf::DecoderModel::kSvmHinge, rtf::DecoderModel::kRidge}) {
      bench_model(*dev, o, d, m);
    }
    for (const int functions : {1, 4}) bench_live(*dev, functions, 500);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_decode: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
