// Head-motion trajectories for the phantom: none, a slow drift, or realistic motion (drift, small jitter and a few
// abrupt movements: steps that stay and spikes that return), each volume's parameters in the convention of
// core/geometry/rigid_transform.hpp, volume 0 unmoved, bounded by a maximum |translation| and |rotation| per
// axis. Trajectories are read back by core/motion/motion_files.hpp (this phantom's motion.tsv, or an FSL .par file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/geometry/rigid_transform.hpp"
#include "sim/phantom/phantom_spec.hpp"

namespace rtf::sim {

std::vector<RigidParams> make_motion(MotionKind kind, int64_t volumes, double tr_s, double max_translation_mm,
                                     double max_rotation_deg, uint64_t seed);

}  // namespace rtf::sim
