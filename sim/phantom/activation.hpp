// Activation regions of the phantom: spheres in template world mm, parsed from "x,y,z,radius[,trial_type[,psc]]",
// tied to the design's conditions, with their percent signal change.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "sim/phantom/design.hpp"
#include "sim/phantom/phantom_spec.hpp"

namespace rtf::sim {

// Throws std::invalid_argument naming the text when it is not 4 to 6 comma-separated fields with numbers where
// numbers belong. An empty trial type ("x,y,z,r,,3") means every condition.
ActivationRegion parse_region(const std::string& text);
std::string to_string(const ActivationRegion& region);

struct ResolvedRegion {
  Eigen::Vector3d centre_mm = Eigen::Vector3d::Zero();
  double radius_mm = 0.0;
  double psc = 0.0;             // peak percent signal change of pure grey matter
  std::vector<int> conditions;  // design condition indices it responds to
  std::string label;            // as parsed, for reports

  bool contains(const Eigen::Vector3d& world_mm) const {
    return (world_mm - centre_mm).squaredNorm() <= radius_mm * radius_mm;
  }
};

// Ties regions to conditions (a trial type the design lacks throws, naming the design's conditions).
std::vector<ResolvedRegion> resolve_regions(const std::vector<ActivationRegion>& regions, const Design& design,
                                            double default_psc);

}  // namespace rtf::sim
