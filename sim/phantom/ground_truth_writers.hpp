// Text formats of the phantom's ground truth: motion.tsv, motion.par (FSL), events.tsv (BIDS), design.tsv, and the
// BIDS sidecar bold.json. Each function returns the file's text; write_text_file writes it atomically.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/geometry/rigid_transform.hpp"
#include "sim/phantom/design.hpp"

namespace rtf::sim {

// Header "volume trans_x_mm trans_y_mm trans_z_mm rot_x_deg rot_y_deg rot_z_deg" (tab-separated), one row per volume.
std::string motion_tsv(const std::vector<RigidParams>& motion);
// FSL .par: rx ry rz (radians) tx ty tz (mm), two spaces between columns, no header.
std::string motion_par(const std::vector<RigidParams>& motion);
// BIDS: "onset duration trial_type", seconds from the start of volume 0.
std::string events_tsv(const std::vector<Event>& events);
// Header: the condition names; one row per volume: each regressor at the volume's time t * TR + offset_s.
std::string design_tsv(const Design& design, double offset_s = 0.0);
// BIDS sidecar: RepetitionTime, SliceTiming (when slices are staggered), TaskName, and a pointer to phantom.json.
std::string bold_sidecar_json(double tr_s, const std::vector<double>& slice_times_s);

// Writes `text` to `path` through a temporary file and a rename (write_text_atomically); throws std::runtime_error
// naming the path and the system's reason.
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace rtf::sim
