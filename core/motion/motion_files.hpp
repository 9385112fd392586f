// Reading head-motion parameters back from files: rtfmri's motion TSVs (the phantom's motion.tsv, `rtfmri mc`'s
// _fd.tsv, the live run's motion.tsv) and FSL's .par, each row one volume's parameters in the convention of
// core/geometry/rigid_transform.hpp.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/geometry/rigid_transform.hpp"

namespace rtf {

// A TSV whose header names trans_x_mm trans_y_mm trans_z_mm rot_x_deg rot_y_deg rot_z_deg (any order, other
// columns ignored), one row per volume.
std::vector<RigidParams> parse_motion_tsv(std::string_view text, const std::string& name = "motion.tsv");
// FSL .par: six whitespace-separated numbers per line, rx ry rz (radians) tx ty tz (mm).
std::vector<RigidParams> parse_fsl_par(std::string_view text, const std::string& name = "motion.par");
// By extension: ".par" is FSL, anything else a motion TSV. Throws std::invalid_argument naming file and line.
std::vector<RigidParams> read_motion_file(const std::filesystem::path& path);

}  // namespace rtf
