// A randomise contrast's maps: the statistic, then with -x the voxel-wise p maps, with -c / -C the cluster p maps, with
// -T the TFCE map and its p map, each p map as 1 - p beside its null distribution.
#include "core/permutation/randomise_outputs.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "core/io/voxel_values.hpp"
#include "core/permutation/fwe.hpp"

namespace rtf {

namespace {

// -x: the uncorrected and max-T corrected p maps and the max-T null distribution.
void write_voxelwise(io::OutputSet& outputs, const std::string& prefix, const RandomiseInputs& in,
                     const ContrastResult& r, nlohmann::json& entry, size_t k) {
  VoxelPermutationResult whole;
  whole.t = r.t;
  whole.exceed = r.permutations.exceed;
  whole.max_null = r.permutations.max_null;
  auto p = whole.uncorrected_p();
  for (double& x : p) x = 1.0 - x;
  write_voxel_values(outputs.add(prefix + "_vox_p_" + in.suffixes[k] + ".nii.gz"), in.grid, in.voxels, p);
  auto corrp = whole.corrected_p();
  size_t significant = 0;
  for (double& x : corrp) {
    significant += x <= 0.05 ? 1 : 0;
    x = 1.0 - x;
  }
  write_voxel_values(outputs.add(prefix + "_vox_corrp_" + in.suffixes[k] + ".nii.gz"), in.grid, in.voxels, corrp);
  write_null_distribution(outputs.add(prefix + "_vox_null_" + in.suffixes[k] + ".txt"), whole.max_null);
  entry["fwe_significant_voxels"] = significant;
  spdlog::info("contrast {} ({}): max {:.3f}; {} voxel(s) at FWE p <= 0.05 ({:.2f} s)", k + 1, in.names[k],
               entry["max"].get<double>(), significant, r.seconds);
}

// -c / -C: the cluster-extent or cluster-mass p map and null distribution (`mass` picks which).
void write_clusters(io::OutputSet& outputs, const RandomiseOptions& o, const RandomiseInputs& in,
                    const ContrastResult& r, SlotStatistics& statistics, bool mass, nlohmann::json& entry, size_t k) {
  const double threshold = mass ? o.cluster_mass : o.cluster_extent;
  const PermutationChunkResult& perm = r.permutations;
  const ObservedClusters c = statistics.clusters(0).observed(r.t, static_cast<float>(threshold));
  const std::string suffix = in.suffixes[k];
  if (!mass) {
    write_voxel_values(outputs.add(o.output + "_clustere_corrp_" + suffix + ".nii.gz"), in.grid, in.voxels,
                       fwe_one_minus_p(c.extent, perm.max_extent, 0.0));
    write_null_distribution(outputs.add(o.output + "_clustere_null_" + suffix + ".txt"), perm.max_extent);
    entry["clusters_extent"] = {{"threshold", threshold}, {"clusters", c.clusters}, {"largest", perm.max_extent.at(0)}};
    spdlog::info("contrast {}: {} cluster(s) at t > {} (largest {} voxels)", k + 1, c.clusters, threshold,
                 perm.max_extent.at(0));
    return;
  }
  write_voxel_values(outputs.add(o.output + "_clusterm_corrp_" + suffix + ".nii.gz"), in.grid, in.voxels,
                     fwe_one_minus_p(c.mass, perm.max_mass, 1e-6));
  write_null_distribution(outputs.add(o.output + "_clusterm_null_" + suffix + ".txt"), perm.max_mass);
  entry["clusters_mass"] = {{"threshold", threshold}, {"clusters", c.clusters}, {"largest", perm.max_mass.at(0)}};
}

// -T: the observed TFCE map, its p map and null distribution.
void write_tfce(io::OutputSet& outputs, const RandomiseOptions& o, const RandomiseInputs& in, const ContrastResult& r,
                SlotStatistics& statistics, nlohmann::json& entry, size_t k) {
  TfceStatistics& tfce = statistics.tfce(0);
  const std::vector<float> observed = tfce.tfce(r.t, r.dh);
  const std::string& suffix = in.suffixes[k];
  write_voxel_values(outputs.add(o.output + "_tfce_" + suffix + ".nii.gz"), in.grid, in.voxels,
                     std::vector<double>(observed.begin(), observed.end()));
  // Float sums of up to ~100 terms on the device: a relative slack of 1e-4 keeps the identity's own maximum.
  write_voxel_values(outputs.add(o.output + "_tfce_corrp_" + suffix + ".nii.gz"), in.grid, in.voxels,
                     fwe_one_minus_p(observed, r.permutations.max_tfce, 1e-4));
  write_null_distribution(outputs.add(o.output + "_tfce_null_" + suffix + ".txt"), r.permutations.max_tfce);
  entry["tfce"] = {{"dh", r.dh},
                   {"E", tfce.extent_exponent()},
                   {"H", tfce.height_exponent()},
                   {"connectivity", o.tfce_c},
                   {"max", r.permutations.max_tfce.at(0)}};
}

}  // namespace

nlohmann::json write_contrast_outputs(io::OutputSet& outputs, const RandomiseOptions& o, const RandomiseInputs& in,
                                      const ContrastResult& r, SlotStatistics& statistics, size_t k) {
  const std::string& suffix = in.suffixes[k];
  const bool f_test = in.models[k].is_f();
  std::vector<double> t(r.t.begin(), r.t.end());
  write_voxel_values(outputs.add(o.output + "_" + suffix + ".nii.gz"), in.grid, in.voxels, t);
  nlohmann::json entry = {{"name", in.names[k]}, {"file", suffix}, {"max", *std::max_element(t.begin(), t.end())}};
  if (o.voxelwise) write_voxelwise(outputs, o.output, in, r, entry, k);
  entry["seconds"] = r.seconds;
  if (!std::isnan(o.cluster_extent) && !f_test) write_clusters(outputs, o, in, r, statistics, false, entry, k);
  if (!std::isnan(o.cluster_mass) && !f_test) write_clusters(outputs, o, in, r, statistics, true, entry, k);
  if ((o.tfce || o.tfce_2d) && !f_test) write_tfce(outputs, o, in, r, statistics, entry, k);
  return entry;
}

}  // namespace rtf
