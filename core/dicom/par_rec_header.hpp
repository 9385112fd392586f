// The PAR half of a Philips PAR/REC pair (the research image export, and the XTC real-time export that writes one pair
// per volume): the general information ('. name : value' lines) and one record per image line, for PAR versions V4,
// V4.1 and V4.2. Pure text parsing, no GDCM and no geometry (scanner/assemble/par_rec_volume.hpp builds the volume).
//
// Image line columns, as the PAR files define them in their own '# === IMAGE INFORMATION DEFINITION' block:
//   V4   (41 numbers): slice, echo, dynamic, cardiac phase, image_type_mr, scanning sequence, index in REC, pixel bits,
//        scan %, recon resolution x y, rescale intercept, rescale slope, scale slope, window centre, window width,
//        angulation ap fh rl, offcentre ap fh rl, slice thickness, slice gap, display orientation, slice orientation,
//        fMRI status, ed/es, pixel spacing x y, echo time, dynamic begin time, trigger time, b factor, averages, flip
//        angle, cardiac frequency, min RR, max RR, turbo factor, inversion delay
//   V4.1 (48): V4 + b value number, gradient orientation number, contrast type, anisotropy type, diffusion ap fh rl
//   V4.2 (49): V4.1 + label type (ASL)
// Pixel values: DV (displayed) = PV * RS + RI; FP (floating point) = DV / (RS * SS).
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rtf::dicom {

// Malformed or unsupported PAR text. `line` is 1-based; 0 where the problem is the file as a whole.
class ParError : public std::runtime_error {
 public:
  ParError(std::string source, int line, const std::string& problem);
  const std::string& source() const { return source_; }
  int line() const { return line_; }

 private:
  std::string source_;
  int line_;
};

enum class ParVersion { kV4 = 40, kV41 = 41, kV42 = 42 };

// Numbers per image line in each version: 41, 48, 49.
int image_line_columns(ParVersion version);
std::string to_string(ParVersion version);

// PAR's slice orientation codes (image line column "slice orientation").
enum class ParSliceOrientation { kTransversal = 1, kSagittal = 2, kCoronal = 3 };

// Triples are in PAR's order (ap, fh, rl). Numeric fields that are absent or empty stay unset.
struct ParGeneralInfo {
  std::string patient_name, examination_name, protocol_name, examination_date_time, series_type;
  std::string patient_position, preparation_direction, technique, scan_mode;
  std::optional<int> acquisition_nr, reconstruction_nr;
  std::optional<int> max_cardiac_phases, max_echoes, max_slices, max_dynamics, max_mixes;
  std::optional<int> max_diffusion_values, max_gradient_orients, label_types, epi_factor;
  std::optional<bool> dynamic_scan, diffusion;
  std::optional<double> scan_duration_s, water_fat_shift_px;
  std::optional<std::array<int, 2>> scan_resolution;
  std::vector<double> repetition_time_ms;  // one value, or several for multi-TR scans
  std::optional<std::array<double, 3>> fov_mm, angulation_deg, off_centre_mm;
  // Every general-information line as written: name (runs of blanks collapsed) -> value (trimmed).
  std::map<std::string, std::string> fields;
};

struct ParImage {
  int line = 0;  // where it is in the PAR text (1-based)
  int slice = 0, echo = 0, dynamic = 0, cardiac_phase = 0, image_type = 0, scanning_sequence = 0;
  int index_in_rec = 0;  // in images, from 0
  int pixel_bits = 0, scan_percentage = 0;
  std::array<int, 2> recon_resolution{};  // x (columns), y (rows)
  double rescale_intercept = 0, rescale_slope = 0, scale_slope = 0, window_centre = 0, window_width = 0;
  std::array<double, 3> angulation_deg{}, offcentre_mm{};  // ap, fh, rl
  double slice_thickness_mm = 0, slice_gap_mm = 0;
  int display_orientation = 0, slice_orientation = 0, fmri_status = 0, image_type_ed_es = 0;
  std::array<double, 2> pixel_spacing_mm{};  // x, y
  double echo_time_ms = 0, dynamic_begin_time_s = 0, trigger_time_ms = 0, diffusion_b_factor = 0;
  int averages = 0;
  double flip_angle_deg = 0;
  int cardiac_frequency_bpm = 0, min_rr_ms = 0, max_rr_ms = 0, turbo_factor = 0;
  double inversion_delay_ms = 0;
  // V4.1 and later (zero / empty in V4).
  int b_value_number = 0, gradient_orientation_number = 0;
  std::string contrast_type, anisotropy_type;
  std::array<double, 3> diffusion{};  // ap, fh, rl
  // V4.2 only (zero before).
  int label_type = 0;

  double display_value(double pixel_value) const { return pixel_value * rescale_slope + rescale_intercept; }
  // DV / (RS * SS); 0 where RS * SS is 0.
  double floating_point_value(double pixel_value) const;
};

struct ParHeader {
  ParVersion version = ParVersion::kV42;
  bool version_from_columns = false;  // no "Research image export tool Vx" line: inferred from the column count
  bool complete = false;              // the "END OF DATA DESCRIPTION FILE" line was seen
  ParGeneralInfo general;
  std::vector<ParImage> images;  // in the order of the file
};

// Throws ParError naming `source` and the line for a malformed or unsupported header (V3 and older, an image line
// with the wrong number of values, a value that is not a number, a general-information line without ':').
ParHeader parse_par(std::string_view text, const std::string& source = "PAR text");

// Reads and parses a .PAR file; throws ParError when it cannot be read.
ParHeader read_par(const std::filesystem::path& file);

}  // namespace rtf::dicom
