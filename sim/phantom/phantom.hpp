// Synthetic BOLD phantom from a T1 template (docs/algorithms/phantom.md): tissue model, moved head, activation,
// noise, and the ground truth on the EPI grid of volume 0. make_phantom builds it in memory; phantom_writer.hpp
// writes it to a directory.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/geometry/rigid_transform.hpp"
#include "core/image/image.hpp"
#include "sim/phantom/activation.hpp"
#include "sim/phantom/design.hpp"
#include "sim/phantom/epi_grid.hpp"
#include "sim/phantom/noise_model.hpp"
#include "sim/phantom/phantom_spec.hpp"

namespace rtf::sim {

// Labels of tissue.nii.gz.
enum TissueLabel : uint8_t { kLabelBackground = 0, kLabelCsf = 1, kLabelGm = 2, kLabelWm = 3 };

struct TsnrSummary {
  int64_t voxels = 0;
  double median = 0.0;
  double mean = 0.0;
};

struct PhantomResult {
  PhantomSpec spec;  // as used: default regions filled in, events of the block design listed
  EpiGrid grid;
  std::array<double, 3> tissue_centres{};    // T1 k-means centres (CSF, GM, WM)
  std::array<int64_t, 3> template_counts{};  // template brain voxels per hard class
  std::vector<RigidParams> motion;           // per volume, about grid.centre_mm
  Design design;
  std::vector<ResolvedRegion> regions;
  std::vector<double> region_gm_mm3;  // grey-matter volume inside each region (template space)
  std::vector<double> slice_times_s;  // per slice, from the start of each volume (all 0 for "none")
  NoiseLevels levels;

  Image bold;                 // nt volumes, float32 output units
  Image brain_mask;           // 1 where the brain fraction (CSF + GM + WM) >= 0.5
  Image tissue_labels;        // TissueLabel: largest fraction inside the brain mask
  Image tissue_fractions;     // 3 volumes: CSF, GM, WM fraction of each voxel
  Image activation_fraction;  // fraction of each voxel that is activated grey matter
  Image activation_mask;      // 1 where activation_fraction >= spec.activation_mask_threshold
  Image activation_psc;       // one volume per condition: percent signal change of the voxel at regressor 1 (its peak)

  // Achieved tSNR of the noise (motion-free, detrended: synthesis.hpp) per tissue, over brain voxels with that
  // tissue's fraction >= 0.5, and over voxels with grey-matter fraction >= 0.8 ("gm_core").
  TsnrSummary tsnr_csf, tsnr_gm, tsnr_wm, tsnr_gm_core;
  int threads = 1;
  double seconds_synthesis = 0.0;
  double seconds_total = 0.0;
};

// Reads spec.template_path (a missing file throws std::runtime_error naming it and scripts/fetch-data.sh).
PhantomResult make_phantom(const PhantomSpec& spec);
// With the template already read.
PhantomResult make_phantom(const PhantomSpec& spec, const Image& t1_template);

}  // namespace rtf::sim
