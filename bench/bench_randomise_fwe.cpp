// Family-wise error rate of permutation inference on null data (issue 15's validity requirement; the experiment is
// described in docs/algorithms/randomise.md, "FWE rate on null data"). For --datasets independent null data sets
// (data set d from seed + d) of --subjects subjects on a small grid inside an ellipsoid mask, it runs the device's
// permutation test (core/permutation/) as `rtfmri randomise` does and counts the data sets in which anything is
// declared significant at FWE p <= 0.05, for each inference type:
//   voxel            max-T: any voxel's VoxelPermutationResult::corrected_p() <= 0.05
//   cluster_extent   the observed map's largest cluster (t > --cluster, 26-connected) against the largest cluster of
//                    every rearrangement (the identity included); no cluster at all is no detection
//   cluster_mass     the same for the largest cluster mass (sum of t - threshold; relative slack 1e-6)
//   tfce             the observed map's largest TFCE (E 0.5, H 2, 26-connected, dh = its largest t / 100, as
//                    `rtfmri randomise -T`) against the largest TFCE of every rearrangement (relative slack 1e-4)
// and for two designs on the same data: one-sample (sign flips of all subjects) and two-group (first half against
// second half, permutations; Freedman-Lane with the mean as nuisance). A valid test detects in 5% of the data sets;
// each line gives the rate with its 95% Wilson interval and whether the rate lies in 5% +- 1.5%.
//
// Noise (--noise):
//   smooth   independent standard normal values per voxel and subject, smoothed on the device by a Gaussian of
//            --fwhm mm (rtf::GaussianSmoother, unmasked) over the whole grid, then masked.
//   phantom  the phantom simulator's noise (sim/phantom: Rician thermal noise and cardiac / respiratory fluctuation
//            with per-voxel phases, weighted by tissue: CSF noisiest), on a 3 mm grid centred on Colin27's brain:
//            every subject is its own phantom run (seed derived from the data set's seed and the subject) of two
//            volumes without motion, activation or drift, and the subject's map is (volume 1 - volume 0) / sqrt(2).
//            Independent runs make subjects independent; within a run the two volumes are exchangeable (the same
//            noise-free signal, i.i.d. thermal noise, per-voxel physiological phases uniform and independent of the
//            rhythms), so their difference is symmetric about 0 at every voxel jointly, as sign flips require, and the
//            baseline and the Rician bias cancel exactly. Motion, activation and drift are signals with one time
//            course for every seed (the drift rises over the run), not noise: kept, they would give every subject the
//            same non-zero mean. Then smoothed by --fwhm like the smooth noise (--fwhm 0: the raw, spatially white
//            noise), and masked by the ellipsoid and the phantom's brain mask.
//
// Prints one JSON line per design and inference type, then one with the totals; progress to stderr every ~10 s.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_stats.hpp"
#include "core/device/device.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/io/data_lookup.hpp"
#include "core/io/nifti_io.hpp"
#include "core/permutation/clusters.hpp"
#include "core/permutation/permutation_set.hpp"
#include "core/permutation/t_contrast_model.hpp"
#include "core/permutation/tfce.hpp"
#include "core/permutation/voxel_permutation.hpp"
#include "sim/phantom/phantom.hpp"
#include "sim/phantom/random.hpp"
#include "sim/phantom/synthesis.hpp"
#include "sim/phantom/template_channels.hpp"
#include "sim/phantom/tissue_model.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Makes the subjects' null maps on the full grid (subjects volumes, x fastest), before smoothing.
class NullSource {
 public:
  virtual ~NullSource() = default;
  virtual rtf::Image subjects(uint64_t dataset_seed, int count) = 0;
};

class GaussianSource final : public NullSource {
 public:
  explicit GaussianSource(rtf::ImageHeader h) : header_(std::move(h)) {}
  rtf::Image subjects(uint64_t dataset_seed, int count) override {
    rtf::ImageHeader h = header_;
    h.num_volumes = count;
    rtf::Image out(h, 0.0f);
    rtf::sim::Rng rng(dataset_seed, 101);  // portable normal variates (sim/phantom/random.hpp)
    for (float& x : out.data()) x = static_cast<float>(rng.normal());
    return out;
  }

 private:
  rtf::ImageHeader header_;
};

// The phantom: the fixed parts (tissue model, grid, calibrated noise levels, signal channels) once; per subject only
// the synthesis of two volumes with the subject's seed (what make_phantom does after its set-up).
class PhantomSource final : public NullSource {
 public:
  PhantomSource(const rtf::Image& t1, std::array<int64_t, 3> grid, double voxel_mm, uint64_t check_seed) {
    spec_.grid = grid;
    spec_.voxel_mm = {voxel_mm, voxel_mm, voxel_mm};
    spec_.volumes = 2;
    spec_.motion = rtf::sim::MotionKind::kNone;
    spec_.psc = 0.0;
    spec_.drift_percent = 0.0;
    spec_.datatype = rtf::DataType::kFloat32;
    spec_.seed = check_seed;
    const rtf::sim::TissueModel tissue = rtf::sim::build_tissue_model(t1);
    const Eigen::Vector3d centre = 0.5 * (tissue.brain_min_mm + tissue.brain_max_mm);
    spec_.centre_mm = std::array<double, 3>{centre.x(), centre.y(), centre.z()};
    phantom_ = rtf::sim::make_phantom(spec_, t1);
    spec_ = phantom_.spec;
    signal_ = rtf::sim::signal_channels(tissue, spec_.baseline, spec_.physio_weight, phantom_.regions,
                                        static_cast<int>(phantom_.design.conditions().size()));
    // Self-check: the synthesis alone reproduces make_phantom's volumes for the same seed.
    const rtf::Image again = synthesize(check_seed);
    if (again.data() != phantom_.bold.data()) throw std::runtime_error("phantom synthesis differs from make_phantom");
  }

  const rtf::sim::PhantomResult& phantom() const { return phantom_; }

  rtf::Image subjects(uint64_t dataset_seed, int count) override {
    rtf::ImageHeader h = phantom_.bold.header();
    h.num_volumes = count;
    h.tr_s = 0.0;
    rtf::Image out(h, 0.0f);
    const size_t nvox = static_cast<size_t>(h.voxels_per_volume());
    for (int s = 0; s < count; ++s) {
      const rtf::Image run = synthesize(subject_seed(dataset_seed, s));
      const auto v0 = run.volume(0), v1 = run.volume(1);
      auto dst = out.volume(s);
      for (size_t i = 0; i < nvox; ++i) dst[i] = static_cast<float>((double{v1[i]} - double{v0[i]}) / std::sqrt(2.0));
    }
    return out;
  }

  static uint64_t subject_seed(uint64_t dataset_seed, int s) {
    return rtf::sim::mix64(rtf::sim::mix64(dataset_seed) + static_cast<uint64_t>(s) + 1);
  }

 private:
  rtf::Image synthesize(uint64_t seed) {
    rtf::sim::PhantomSpec spec = spec_;
    spec.seed = seed;
    rtf::sim::SynthesisInputs in;
    in.spec = &spec;
    in.grid = &phantom_.grid;
    in.signal = &signal_;
    in.motion = &phantom_.motion;
    in.design = &phantom_.design;
    in.levels = phantom_.levels;
    in.slice_times_s = phantom_.slice_times_s;
    in.measure.assign(static_cast<size_t>(phantom_.grid.voxels()), 1);  // as make_phantom (tSNR bookkeeping only)
    return rtf::sim::synthesize(in).bold;
  }

  rtf::sim::PhantomSpec spec_;
  rtf::sim::PhantomResult phantom_;
  rtf::sim::ChannelVolume signal_;
};

struct TestDesign {
  std::string name;
  rtf::PermutationKind kind;
  Eigen::MatrixXd design;
  rtf::TContrastModel model;
};

constexpr int kInferences = 4;
const std::array<const char*, kInferences> kInferenceNames = {"voxel", "cluster_extent", "cluster_mass", "tfce"};
constexpr std::array<double, 3> kAlphas = {0.01, 0.05, 0.10};

struct Tally {
  std::array<std::array<int64_t, kAlphas.size()>, kInferences> detections{};
  int64_t datasets = 0;
  int64_t with_cluster = 0;    // observed maps with at least one cluster
  double observed_extent = 0;  // sum of the observed largest extents
  double max_t = 0;            // sum of the observed largest t
  int rearrangements = 0;
  bool exhaustive = false;
};

}  // namespace

int main(int argc, char** argv) {
  std::string device_spec, noise_kind = "smooth", template_path;
  int datasets = 1000, subjects = 12, permutations = 1000;
  uint64_t seed = 1;
  double fwhm = 6.0, cluster = 3.0, voxel_mm = 3.0;
  std::vector<int64_t> grid_option{32, 32, 24};
  bool two_group = true, with_tfce = true;
  CLI::App app("rtfmri FWE rate of permutation inference on null data sets (JSON lines)");
  app.add_option("--device", device_spec, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--datasets", datasets, "Null data sets (data set d uses seed + d)")->capture_default_str();
  app.add_option("--seed", seed, "Seed of data set 0")->capture_default_str();
  app.add_option("--subjects", subjects, "Subjects per data set")->capture_default_str();
  app.add_option("--noise", noise_kind, "smooth (smoothed Gaussian) or phantom (the phantom simulator's noise)")
      ->check(CLI::IsMember({"smooth", "phantom"}))
      ->capture_default_str();
  app.add_option("--fwhm", fwhm, "Smoothing of each subject's map, mm (0: none)")->capture_default_str();
  app.add_option("--permutations", permutations, "Rearrangements per test (randomise -n)")->capture_default_str();
  app.add_option("--cluster", cluster, "Cluster-forming threshold (t), 26-connected")->capture_default_str();
  app.add_option("--grid", grid_option, "Grid size x y z")->expected(3)->capture_default_str();
  app.add_option("--voxel", voxel_mm, "Voxel size, mm (isotropic)")->capture_default_str();
  app.add_option("--two-group", two_group, "Also the two-group permutation design (first half vs second half)")
      ->capture_default_str();
  app.add_option("--tfce", with_tfce, "Also TFCE (randomise -T)")->capture_default_str();
  app.add_option("--template", template_path, "Phantom template (default: mricron/ch2bet.nii.gz, installed data)");
  CLI11_PARSE(app, argc, argv);
  if (subjects < 4 || datasets < 1 || !(cluster > 0.0) || fwhm < 0.0) {
    fmt::print(stderr, "need --subjects >= 4, --datasets >= 1, --cluster > 0, --fwhm >= 0\n");
    return 2;
  }
  const std::array<int64_t, 3> grid{grid_option[0], grid_option[1], grid_option[2]};
  const auto start = Clock::now();
  auto device = rtf::Device::open(device_spec);

  // The grid, the noise source and the mask (an ellipsoid with semi-axes 0.45 of the grid, and the brain).
  std::unique_ptr<NullSource> source;
  rtf::ImageHeader header;
  std::vector<uint8_t> brain;
  if (noise_kind == "smooth") {
    header.dims = grid;
    header.voxel_mm = {voxel_mm, voxel_mm, voxel_mm};
    header.affine = Eigen::Matrix4d::Identity();
    for (int a = 0; a < 3; ++a) header.affine(a, a) = voxel_mm;
    source = std::make_unique<GaussianSource>(header);
  } else {
    const std::filesystem::path path = template_path.empty()
                                           ? rtf::find_installed_data(rtf::kDefaultTemplate, rtf::executable_dir())
                                           : std::filesystem::path(template_path);
    auto phantom =
        std::make_unique<PhantomSource>(rtf::read_nifti(path), grid, voxel_mm, PhantomSource::subject_seed(seed, 0));
    header = phantom->phantom().brain_mask.header();
    for (float v : phantom->phantom().brain_mask.data()) brain.push_back(v > 0.0f ? 1 : 0);
    const rtf::sim::PhantomResult& ph = phantom->phantom();
    fmt::print(
        stderr,
        "phantom: template {}, grid centre ({:.1f}, {:.1f}, {:.1f}) mm, thermal sd {:.1f}, physio amplitude {:.3g}\n",
        path.string(), (*ph.spec.centre_mm)[0], (*ph.spec.centre_mm)[1], (*ph.spec.centre_mm)[2], ph.levels.thermal_sd,
        ph.levels.physio_amplitude);
    source = std::move(phantom);
  }
  header.num_volumes = 1;
  const size_t grid_voxels = static_cast<size_t>(header.voxels_per_volume());
  std::vector<uint8_t> mask(grid_voxels, 0);
  size_t voxels = 0;
  {
    size_t i = 0;
    for (int64_t z = 0; z < grid[2]; ++z) {
      for (int64_t y = 0; y < grid[1]; ++y) {
        for (int64_t x = 0; x < grid[0]; ++x, ++i) {
          double r2 = 0.0;
          const std::array<int64_t, 3> p{x, y, z};
          for (int a = 0; a < 3; ++a) {
            const double c = 0.5 * static_cast<double>(grid[a] - 1), s = 0.45 * static_cast<double>(grid[a]);
            r2 += (static_cast<double>(p[a]) - c) * (static_cast<double>(p[a]) - c) / (s * s);
          }
          mask[i] = r2 <= 1.0 && (brain.empty() || brain[i] != 0) ? 1 : 0;
          voxels += mask[i];
        }
      }
    }
  }

  if (!brain.empty()) {
    std::array<size_t, 4> labels{};
    const auto& lab = static_cast<PhantomSource*>(source.get())->phantom().tissue_labels.data();
    for (size_t i = 0; i < grid_voxels; ++i) {
      if (mask[i]) labels[static_cast<size_t>(std::clamp(static_cast<int>(lab[i]), 0, 3))]++;
    }
    fmt::print(stderr, "mask: {} voxels (ellipsoid and brain): CSF {}, GM {}, WM {}\n", voxels, labels[1], labels[2],
               labels[3]);
  }
  std::optional<rtf::GaussianSmoother> smoother;
  if (fwhm > 0.0)
    smoother.emplace(*device, header.dims, header.voxel_mm, rtf::SmoothingSpec{.fwhm_mm = fwhm}, std::nullopt,
                     subjects);
  constexpr int kClusterBlock = 64;
  rtf::ClusterStatistics clusters(*device, header.dims, mask, 26, kClusterBlock);
  std::optional<rtf::TfceStatistics> tfce;
  if (with_tfce) tfce.emplace(*device, header.dims, mask, 26, kClusterBlock);

  std::vector<TestDesign> designs;
  {
    TestDesign one{"one-sample", rtf::PermutationKind::kSignFlip, Eigen::MatrixXd::Ones(subjects, 1), {}};
    one.model = rtf::make_t_contrast_model(one.design, Eigen::RowVectorXd::Ones(1));
    designs.push_back(std::move(one));
    if (two_group) {
      TestDesign two{"two-group", rtf::PermutationKind::kPermute, Eigen::MatrixXd::Zero(subjects, 2), {}};
      for (int i = 0; i < subjects; ++i) two.design(i, i < subjects / 2 ? 0 : 1) = 1.0;
      Eigen::RowVectorXd c(2);
      c << 1.0, -1.0;
      two.model = rtf::make_t_contrast_model(two.design, c);
      designs.push_back(std::move(two));
    }
  }
  std::vector<Tally> tallies(designs.size());

  const auto loop_start = Clock::now();
  auto last_report = loop_start;
  double seconds_data = 0.0, seconds_test = 0.0;
  std::vector<float> data, residuals;
  for (int d = 0; d < datasets; ++d) {
    const uint64_t dataset_seed = seed + static_cast<uint64_t>(d);
    auto t0 = Clock::now();
    rtf::Image maps = source->subjects(dataset_seed, subjects);
    if (smoother) maps = smoother->smooth(maps);
    data.clear();
    for (int s = 0; s < subjects; ++s) {
      const auto vol = maps.volume(s);
      for (size_t i = 0; i < grid_voxels; ++i) {
        if (mask[i]) data.push_back(vol[i]);
      }
    }
    seconds_data += seconds_since(t0);
    t0 = Clock::now();
    for (size_t k = 0; k < designs.size(); ++k) {
      const TestDesign& des = designs[k];
      const rtf::PermutationSet set =
          rtf::make_permutation_set(des.kind, subjects, permutations, dataset_seed, {}, &des.design);
      residuals = data;
      rtf::remove_nuisance(des.model, residuals, voxels);
      std::vector<int64_t> max_extent(static_cast<size_t>(set.count));
      std::vector<double> max_mass(static_cast<size_t>(set.count));
      std::vector<float> max_tfce(static_cast<size_t>(set.count), 0.0f);
      float dh = 0.0f;  // TFCE's step, as rtfmri randomise -T: the observed largest t / 100 (at least 0.01)
      if (tfce) {
        const rtf::VoxelPermutationResult observed = rtf::voxel_permutation_test(
            *device, des.model, rtf::make_permutation_set(des.kind, subjects, 1, dataset_seed, {}, &des.design),
            residuals, voxels);
        dh = std::max(*std::max_element(observed.t.begin(), observed.t.end()), 1.0f) / 100.0f;
      }
      const rtf::PermutationMaps consume = [&](const rtf::DeviceBuffer<float>& block, int first, int count) {
        const rtf::ClusterMaxima m = clusters.maxima(block, count, static_cast<float>(cluster));
        std::copy(m.extent.begin(), m.extent.end(), max_extent.begin() + first);
        std::copy(m.mass.begin(), m.mass.end(), max_mass.begin() + first);
        if (tfce) {
          const std::vector<float> e = tfce->maxima(block, count, dh);
          std::copy(e.begin(), e.end(), max_tfce.begin() + first);
        }
      };
      const rtf::VoxelPermutationResult r =
          rtf::voxel_permutation_test(*device, des.model, set, residuals, voxels, {}, consume, kClusterBlock);
      // FWE p of each inference type (1 when nothing to test).
      const std::vector<double> corrp = r.corrected_p();
      std::array<double, kInferences> p{};
      p[0] = *std::min_element(corrp.begin(), corrp.end());
      p[1] = p[2] = p[3] = 1.0;
      if (max_extent[0] > 0) {
        int64_t e = 0, m = 0;
        const double bound = max_mass[0] * (1.0 - 1e-6);
        for (int j = 0; j < set.count; ++j) {
          e += max_extent[static_cast<size_t>(j)] >= max_extent[0] ? 1 : 0;
          m += max_mass[static_cast<size_t>(j)] >= bound ? 1 : 0;
        }
        p[1] = static_cast<double>(e) / set.count;
        p[2] = static_cast<double>(m) / set.count;
      }
      if (tfce && max_tfce[0] > 0.0f) {
        const auto bound = static_cast<float>(static_cast<double>(max_tfce[0]) * (1.0 - 1e-4));
        int64_t e = 0;
        for (float v : max_tfce) e += v >= bound ? 1 : 0;
        p[3] = static_cast<double>(e) / set.count;
      }
      Tally& t = tallies[k];
      for (int i = 0; i < kInferences; ++i) {
        for (size_t a = 0; a < kAlphas.size(); ++a)
          t.detections[static_cast<size_t>(i)][a] += p[i] <= kAlphas[a] ? 1 : 0;
      }
      t.datasets++;
      t.with_cluster += max_extent[0] > 0 ? 1 : 0;
      t.observed_extent += static_cast<double>(max_extent[0]);
      t.max_t += *std::max_element(r.t.begin(), r.t.end());
      t.rearrangements = set.count;
      t.exhaustive = set.exhaustive;
    }
    seconds_test += seconds_since(t0);
    if (seconds_since(last_report) >= 10.0 || d + 1 == datasets) {
      last_report = Clock::now();
      const double elapsed = seconds_since(loop_start);
      std::string rates;
      for (size_t k = 0; k < designs.size(); ++k) {
        for (int i = 0; i < kInferences; ++i) {
          rates += fmt::format(" {}/{} {:.3f}", designs[k].name, kInferenceNames[static_cast<size_t>(i)],
                               static_cast<double>(tallies[k].detections[static_cast<size_t>(i)][1]) / (d + 1));
        }
      }
      fmt::print(stderr, "[{}/{}] {:.0f} s, about {:.0f} s left;{}\n", d + 1, datasets, elapsed,
                 elapsed / (d + 1) * (datasets - d - 1), rates);
    }
  }

  const double total = seconds_since(start);
  for (size_t k = 0; k < designs.size(); ++k) {
    const Tally& t = tallies[k];
    for (int i = 0; i < kInferences; ++i) {
      if (i == 3 && !tfce) continue;
      const auto& det = t.detections[static_cast<size_t>(i)];
      const int64_t hits = det[1];
      const double rate = static_cast<double>(hits) / static_cast<double>(t.datasets);
      const auto ci = rtf::bench::wilson(hits, t.datasets);
      nlohmann::json line = {{"bench", "randomise_fwe"},
                             {"noise", noise_kind},
                             {"design", designs[k].name},
                             {"inference", kInferenceNames[static_cast<size_t>(i)]},
                             {"datasets", t.datasets},
                             {"detections", hits},
                             {"rate", rate},
                             {"wilson95_low", ci[0]},
                             {"wilson95_high", ci[1]},
                             {"rate_within_5pct_pm_1.5", rate >= 0.035 && rate <= 0.065},
                             {"interval_within_5pct_pm_1.5", ci[0] >= 0.035 && ci[1] <= 0.065},
                             {"rate_at_alpha_0.01", static_cast<double>(det[0]) / static_cast<double>(t.datasets)},
                             {"rate_at_alpha_0.10", static_cast<double>(det[2]) / static_cast<double>(t.datasets)},
                             {"subjects", subjects},
                             {"voxels", voxels},
                             {"grid", grid},
                             {"voxel_mm", voxel_mm},
                             {"fwhm_mm", fwhm},
                             {"cluster_threshold", cluster},
                             {"rearrangements", t.rearrangements},
                             {"exhaustive", t.exhaustive},
                             {"seed", seed},
                             {"device", device->info().device_name}};
      if (i == 1 || i == 2) {
        line["observed_with_cluster"] = static_cast<double>(t.with_cluster) / static_cast<double>(t.datasets);
        line["mean_observed_largest_extent"] = t.observed_extent / static_cast<double>(t.datasets);
      } else if (i == 0) {
        line["mean_observed_max_t"] = t.max_t / static_cast<double>(t.datasets);
      }
      rtf::bench::print_line(line);
    }
  }
  rtf::bench::print_line({{"bench", "randomise_fwe_total"},
                          {"noise", noise_kind},
                          {"datasets", datasets},
                          {"designs", designs.size()},
                          {"seconds", total},
                          {"seconds_data", seconds_data},
                          {"seconds_tests", seconds_test},
                          {"device", device->info().device_name}});
  return 0;
}
