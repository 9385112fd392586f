// Permutation benchmark (issue 15): BROCCOLI's second-level case, 49 subjects on the MNI152 2 mm grid inside its brain
// mask, 10,000 sign flips of a one-sample test, voxel-wise (max-T) inference: the device part of `rtfmri randomise
// -1 -x` (upload, every rearrangement, the maxima, the read-back). Data: random normal values (the time does not depend
// on them). Prints one JSON line with the median and p95 of --runs runs after one untimed run (kernel compilation), the
// arithmetic done and its rate. --design two-group times a two-group permutation design (Freedman-Lane, 2 dot products
// per rearrangement instead of 1).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <random>
#include <string>

#include "bench/bench_stats.hpp"
#include "bench/extra_data.hpp"
#include "core/device/device.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/io/nifti_io.hpp"
#include "core/permutation/clusters.hpp"
#include "core/permutation/permutation_set.hpp"
#include "core/permutation/t_contrast_model.hpp"
#include "core/permutation/tfce.hpp"
#include "core/permutation/voxel_permutation.hpp"

int main(int argc, char** argv) {
  std::string device_spec, mask_path = rtf::bench::extra_data("templates/MNI152_T1_2mm_brain.nii.gz"),
                           design_kind = "one-sample";
  int subjects = 49, permutations = 10000, runs = 5;
  double cluster = 0.0, fwhm = 0.0;
  bool with_tfce = false;
  CLI::App app("rtfmri permutation benchmark: voxel-wise max-T, JSON line");
  app.add_option("--device", device_spec, "OpenCL device spec (gpu, cpu, P:D)")->envname("RTFMRI_DEVICE");
  app.add_option("--mask", mask_path, "Brain image whose non-zero voxels are tested")->capture_default_str();
  app.add_option("--subjects", subjects, "Subjects")->capture_default_str();
  app.add_option("--permutations", permutations, "Rearrangements (sign flips or permutations)")->capture_default_str();
  app.add_option("--design", design_kind, "one-sample (sign flips) or two-group (permutations)")
      ->check(CLI::IsMember({"one-sample", "two-group"}))
      ->capture_default_str();
  app.add_option("--runs", runs, "Timed runs")->capture_default_str();
  app.add_option("--fwhm", fwhm, "Smooth each subject's noise by this FWHM (mm; realistic clusters)");
  app.add_flag("--tfce", with_tfce, "Also TFCE (E 0.5, H 2, 26-connected, dh = the observed largest t / 100)");
  app.add_option("--cluster", cluster, "Also cluster extent and mass at this t (randomise -c/-C), 26-connected");
  CLI11_PARSE(app, argc, argv);

  const rtf::Image mask = rtf::read_nifti(mask_path);
  size_t voxels = 0;
  for (float v : mask.volume(0)) voxels += v != 0.0f ? 1 : 0;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto device = rtf::Device::open(device_spec);
  rtf::ImageHeader h = mask.header();
  h.num_volumes = subjects;
  rtf::Image noise(h, 0.0f);
  for (float& x : noise.data()) x = normal(rng);
  if (fwhm > 0.0) {
    rtf::GaussianSmoother smoother(*device, h.dims, h.voxel_mm, {.fwhm_mm = fwhm}, std::nullopt, subjects);
    noise = smoother.smooth(noise);
  }
  std::vector<float> data;
  data.reserve(static_cast<size_t>(subjects) * voxels);
  for (int s = 0; s < subjects; ++s) {
    const auto vol = noise.volume(s);
    for (size_t i = 0; i < vol.size(); ++i) {
      if (mask.volume(0)[i] != 0.0f) data.push_back(vol[i]);
    }
  }
  Eigen::MatrixXd design;
  Eigen::RowVectorXd contrast;
  rtf::PermutationKind kind = rtf::PermutationKind::kSignFlip;
  if (design_kind == "one-sample") {
    design = Eigen::MatrixXd::Ones(subjects, 1);
    contrast = Eigen::RowVectorXd::Ones(1);
  } else {
    design = Eigen::MatrixXd::Zero(subjects, 2);
    for (int i = 0; i < subjects; ++i) design(i, i < subjects / 2 ? 0 : 1) = 1.0;
    contrast = Eigen::RowVectorXd(2);
    contrast << 1.0, -1.0;
    kind = rtf::PermutationKind::kPermute;
  }
  const rtf::TContrastModel model = rtf::make_t_contrast_model(design, contrast);
  const rtf::PermutationSet set = rtf::make_permutation_set(kind, subjects, permutations, 1, {}, &design);
  rtf::remove_nuisance(model, data, voxels);
  std::unique_ptr<rtf::ClusterStatistics> clusters;
  std::unique_ptr<rtf::TfceStatistics> tfce;
  constexpr int kClusterBlock = 64;
  std::vector<int64_t> max_extent(static_cast<size_t>(set.count));
  std::vector<float> max_tfce(static_cast<size_t>(set.count));
  rtf::PermutationMaps consume;
  std::vector<uint8_t> inside(mask.volume(0).size());
  for (size_t i = 0; i < inside.size(); ++i) inside[i] = mask.volume(0)[i] != 0.0f ? 1 : 0;
  if (cluster > 0.0) {
    clusters = std::make_unique<rtf::ClusterStatistics>(*device, mask.header().dims, inside, 26, kClusterBlock);
  }
  float dh = 0.0f;
  if (with_tfce) {
    tfce = std::make_unique<rtf::TfceStatistics>(*device, mask.header().dims, inside, 26, kClusterBlock);
    const rtf::VoxelPermutationResult observed = rtf::voxel_permutation_test(
        *device, model, rtf::make_permutation_set(kind, subjects, 1, 1, {}, &design), data, voxels);
    dh = std::max(*std::max_element(observed.t.begin(), observed.t.end()), 1.0f) / 100.0f;
  }
  if (clusters || tfce) {
    consume = [&](const rtf::DeviceBuffer<float>& maps, int first, int count) {
      if (clusters) {
        const rtf::ClusterMaxima m = clusters->maxima(maps, count, static_cast<float>(cluster));
        std::copy(m.extent.begin(), m.extent.end(), max_extent.begin() + first);
      }
      if (tfce) {
        const std::vector<float> m = tfce->maxima(maps, count, dh);
        std::copy(m.begin(), m.end(), max_tfce.begin() + first);
      }
    };
  }
  std::vector<double> ms;
  float t_max = 0.0f;
  for (int run = 0; run <= runs; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    const rtf::VoxelPermutationResult r =
        rtf::voxel_permutation_test(*device, model, set, data, voxels, {}, consume, consume ? kClusterBlock : 128);
    const double elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (run > 0) ms.push_back(elapsed);
    t_max = *std::max_element(r.t.begin(), r.t.end());
  }
  const rtf::bench::Timing timing = rtf::bench::summarize(ms);
  // Multiply-adds: p dot products of length n per voxel and rearrangement.
  const double fma = static_cast<double>(voxels) * set.count * model.p * subjects;
  nlohmann::json line = {{"bench", "randomise_voxelwise"},
                         {"device", device->info().device_name},
                         {"design", design_kind},
                         {"subjects", subjects},
                         {"voxels", voxels},
                         {"rearrangements", set.count},
                         {"runs", timing.runs},
                         {"median_ms", timing.median},
                         {"p95_ms", timing.p95},
                         {"multiply_adds", fma},
                         {"gfma_per_s", fma / (timing.median * 1e6)},
                         {"t_max", t_max},
                         {"cluster_threshold", cluster},
                         {"fwhm_mm", fwhm},
                         {"tfce", with_tfce},
                         {"tfce_dh", dh},
                         {"largest_null_tfce", *std::max_element(max_tfce.begin(), max_tfce.end())},
                         {"largest_null_cluster", *std::max_element(max_extent.begin(), max_extent.end())}};
  fmt::print("{}\n", line.dump());
  return 0;
}
