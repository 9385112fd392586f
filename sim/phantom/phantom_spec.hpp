// Every parameter of a synthetic BOLD phantom (`rtfmri sim phantom`), with SPM/BIDS-style defaults, and their
// validation. What each one means: docs/algorithms/phantom.md.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/geometry/rigid_transform.hpp"
#include "core/image/image.hpp"

namespace rtf::sim {

enum class MotionKind { kNone, kDrift, kRealistic };
enum class NoiseDistribution { kRician, kGaussian };

// A sphere of activation in template world mm, restricted to grey matter. An empty trial type responds to
// every condition; a psc below 0 uses PhantomSpec::psc.
struct ActivationRegion {
  std::array<double, 3> centre_mm{0.0, 0.0, 0.0};
  double radius_mm = 10.0;
  std::string trial_type;
  double psc = -1.0;
};

// One BIDS event: onset and duration in seconds from the start of volume 0, and its condition.
struct Event {
  double onset_s = 0.0;
  double duration_s = 0.0;
  std::string trial_type = "task";
};

struct PhantomSpec {
  // Template: a brain-extracted T1 (Colin27's ch2bet by default), background exactly 0.
  std::filesystem::path template_path;

  // EPI grid (RAS, axial), volume count and timing.
  std::array<int64_t, 3> grid{64, 64, 33};
  std::array<double, 3> voxel_mm{3.0, 3.0, 3.0};
  std::optional<std::array<double, 3>> centre_mm;  // world mm of the grid centre; default: see epi_grid.hpp
  int64_t volumes = 200;
  double tr_s = 2.0;
  std::string slice_order = "none";  // "none" (all slices at t*TR) or a core/temporal/slice_order.hpp name
  int supersample = 2;               // sub-samples per axis per EPI voxel (partial volume)

  // Tissue: EPI baselines (output units) of pure CSF, GM, WM.
  std::array<double, 3> baseline{15000.0, 10000.0, 7500.0};

  // Motion.
  MotionKind motion = MotionKind::kRealistic;
  double max_translation_mm = 1.5;
  double max_rotation_deg = 1.5;
  std::vector<RigidParams> motion_override;  // if not empty: these parameters per volume (from --motion-file)

  // Activation.
  std::vector<ActivationRegion> regions;  // empty: default_regions()
  std::string design = "block";           // "block" or "events"
  double block_on_s = 20.0;
  double block_off_s = 20.0;
  std::vector<Event> events;  // design "events": from the events file
  double psc = 2.0;           // peak percent signal change of pure grey matter
  double activation_mask_threshold = 0.2;
  int microtime = 16;  // regressor time bins per TR

  // Noise.
  double tsnr = 80.0;  // median tSNR of grey-matter voxels (noise_model.hpp); 0 turns thermal and physio noise off
  double physio_share = 0.4;  // share of GM noise variance that is physiological (rest: thermal)
  double cardiac_hz = 1.1;
  double respiratory_hz = 0.3;
  std::array<double, 3> physio_weight{3.0, 1.0, 0.5};  // physiological amplitude per unit signal: CSF, GM, WM
  double drift_percent = 1.0;                          // slow drift over the run, percent of the signal; 0 turns it off
  NoiseDistribution noise = NoiseDistribution::kRician;
  uint64_t seed = 1;

  // Output.
  DataType datatype = DataType::kInt16;
  int threads = 0;  // 0: hardware concurrency
};

// Bilateral primary motor (hand knob) and bilateral primary visual cortex, 8 mm spheres in MNI mm.
std::vector<ActivationRegion> default_regions();

// Throws std::invalid_argument naming the first parameter that is out of range.
void validate(const PhantomSpec& spec);

std::string to_string(MotionKind kind);
MotionKind parse_motion_kind(const std::string& name);  // "none", "drift", "realistic"

}  // namespace rtf::sim
