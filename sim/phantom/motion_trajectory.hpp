// Head-motion trajectories for the phantom: none, a slow drift, or realistic motion (drift, small jitter and a few
// abrupt movements: steps that stay and spikes that return), each volume's parameters in the convention of
// core/geometry/rigid_transform.hpp, volume 0 unmoved, bounded by a maximum |translation| and |rotation| per
// axis. Also reads trajectories back (this phantom's motion.tsv, or an FSL .par file).
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

// A TSV whose header names trans_x_mm trans_y_mm trans_z_mm rot_x_deg rot_y_deg rot_z_deg (any order, other
// columns ignored), one row per volume.
std::vector<RigidParams> parse_motion_tsv(std::string_view text, const std::string& name = "motion.tsv");
// FSL .par: six whitespace-separated numbers per line, rx ry rz (radians) tx ty tz (mm).
std::vector<RigidParams> parse_fsl_par(std::string_view text, const std::string& name = "motion.par");
// By extension: ".par" is FSL, anything else a motion TSV. Throws std::invalid_argument naming file and line.
std::vector<RigidParams> read_motion_file(const std::filesystem::path& path);

}  // namespace rtf::sim
