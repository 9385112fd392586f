// Phantom parameters: default activation regions, validation, motion-kind names.
#include "sim/phantom/phantom_spec.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/temporal/slice_order.hpp"

namespace rtf::sim {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("phantom: " + what);
}

bool finite_positive(double v) {
  return std::isfinite(v) && v > 0.0;
}
bool finite_non_negative(double v) {
  return std::isfinite(v) && v >= 0.0;
}

}  // namespace

std::vector<ActivationRegion> default_regions() {
  return {
      {{-38.0, -24.0, 56.0}, 8.0, "", -1.0},  // left M1, hand knob
      {{38.0, -24.0, 56.0}, 8.0, "", -1.0},   // right M1, hand knob
      {{-8.0, -88.0, 4.0}, 8.0, "", -1.0},    // left V1, calcarine
      {{10.0, -88.0, 4.0}, 8.0, "", -1.0},    // right V1, calcarine
  };
}

void validate(const PhantomSpec& s) {
  for (int a = 0; a < 3; ++a) {
    require(s.grid[a] >= 1 && s.grid[a] <= 1024, fmt::format("grid size {} outside 1..1024", s.grid[a]));
    require(finite_positive(s.voxel_mm[a]) && s.voxel_mm[a] <= 50.0,
            fmt::format("voxel size {} mm outside (0, 50]", s.voxel_mm[a]));
  }
  if (s.centre_mm) {
    for (double c : *s.centre_mm) require(std::isfinite(c), "grid centre must be finite");
  }
  require(s.volumes >= 1 && s.volumes <= 100000, fmt::format("{} volumes outside 1..100000", s.volumes));
  require(finite_positive(s.tr_s) && s.tr_s <= 60.0, fmt::format("TR {} s outside (0, 60]", s.tr_s));
  if (s.slice_order != "none") parse_slice_order(s.slice_order);  // throws naming the accepted values
  require(s.supersample >= 1 && s.supersample <= 8, fmt::format("supersample {} outside 1..8", s.supersample));
  for (double b : s.baseline) require(finite_positive(b) && b <= 20000.0, "baselines must be in (0, 20000]");
  require(finite_non_negative(s.max_translation_mm) && s.max_translation_mm <= 20.0,
          fmt::format("max translation {} mm outside [0, 20]", s.max_translation_mm));
  require(finite_non_negative(s.max_rotation_deg) && s.max_rotation_deg <= 20.0,
          fmt::format("max rotation {} deg outside [0, 20]", s.max_rotation_deg));
  if (!s.motion_override.empty()) {
    require(static_cast<int64_t>(s.motion_override.size()) >= s.volumes,
            fmt::format("the motion file has {} rows for {} volumes", s.motion_override.size(), s.volumes));
  }
  for (const auto& r : s.regions) {
    require(finite_positive(r.radius_mm), fmt::format("region radius {} mm must be positive", r.radius_mm));
    for (double c : r.centre_mm) require(std::isfinite(c), "region centre must be finite");
    require(std::isfinite(r.psc) && r.psc <= 100.0, "region psc must be finite and at most 100");
  }
  require(s.design == "block" || s.design == "events", "design must be 'block' or 'events'");
  if (s.design == "block") {
    require(finite_positive(s.block_on_s), fmt::format("block-on {} s must be positive", s.block_on_s));
    require(finite_non_negative(s.block_off_s), fmt::format("block-off {} s must be >= 0", s.block_off_s));
  } else {
    require(!s.events.empty(), "the events design needs at least one event");
    for (const auto& e : s.events) {
      require(std::isfinite(e.onset_s) && finite_non_negative(e.duration_s),
              fmt::format("event onset {} / duration {} invalid", e.onset_s, e.duration_s));
    }
  }
  require(std::isfinite(s.psc) && s.psc >= 0.0 && s.psc <= 100.0, fmt::format("psc {} outside [0, 100]", s.psc));
  require(std::isfinite(s.activation_mask_threshold) && s.activation_mask_threshold > 0.0 &&
              s.activation_mask_threshold <= 1.0,
          "activation mask threshold must be in (0, 1]");
  require(s.microtime >= 1 && s.microtime <= 1024, "microtime bins per TR outside 1..1024");
  require(finite_non_negative(s.tsnr), fmt::format("tSNR {} must be >= 0 (0: no noise)", s.tsnr));
  require(std::isfinite(s.physio_share) && s.physio_share >= 0.0 && s.physio_share < 1.0,
          "physiological share of the noise variance must be in [0, 1)");
  require(finite_positive(s.cardiac_hz) && finite_positive(s.respiratory_hz), "physiological rates must be > 0");
  for (double w : s.physio_weight) require(finite_non_negative(w), "physiological weights must be >= 0");
  require(finite_non_negative(s.drift_percent) && s.drift_percent <= 50.0, "drift percent outside [0, 50]");
  require(s.datatype == DataType::kInt16 || s.datatype == DataType::kFloat32, "datatype must be int16 or float32");
  require(s.threads >= 0, "threads must be >= 0");
}

std::string to_string(MotionKind kind) {
  switch (kind) {
    case MotionKind::kNone:
      return "none";
    case MotionKind::kDrift:
      return "drift";
    case MotionKind::kRealistic:
      return "realistic";
  }
  return "unknown";
}

MotionKind parse_motion_kind(const std::string& name) {
  if (name == "none") return MotionKind::kNone;
  if (name == "drift") return MotionKind::kDrift;
  if (name == "realistic") return MotionKind::kRealistic;
  throw std::invalid_argument(fmt::format("phantom: motion '{}' is not one of none, drift, realistic", name));
}

}  // namespace rtf::sim
