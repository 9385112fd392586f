// One volume from a Philips PAR/REC pair as dcm2niix (v1.0.20220720, Debian's) writes it: the XTC real-time export
// writes one pair per volume, often with two image types (e.g. 16 magnitude and 17 phase in pyneal's example), which
// dcm2niix refuses; here one type is kept. What dcm2niix does, found by reading its nii_readParRec for facts and by
// running it (tests/scanner/test_par_rec_volume.cpp checks every point against it):
//   - voxels: 16-bit little-endian images read as signed (dcm2niix's isSigned), NIfTI rows bottom-up (j = rows-1-row),
//     slices by PAR slice number, reversed where the stack's first slice lies above its last (see .cpp);
//   - scaling (dcm2niix's default -p y): where every kept image has the same RS, RI and SS, the "floating point" value
//     FP = (PV * RS + RI) / (RS * SS), written as int16 with float32 scl_slope = FP(1) - FP(0) and scl_inter = FP(0)
//     (the float subtraction costs up to ~1e-4 relative; reproduced so values match what readers of its file see);
//     where RS, RI or SS vary between the kept images, the displayed value DV = PV * RS + RI per image, as float32;
//   - affine: rotation from the image lines' angulation (Rx(rl) Ry(ap) Rz(fh)), permuted by slice orientation, centred
//     on the general information's "Off Centre midslice" (not the image lines' offcentres: XTC dumps that write 0 0 0
//     there get a volume centred on the isocentre); slice spacing from the first and last slices' offcentres where it
//     disagrees with thickness + gap (dcm2niix's issue 273); V4 centres on voxel n/2, V4.1+ on (n-1)/2;
//   - TR: the general information's "Repetition time" (the XTC dumps say 1 ms, and dcm2niix writes 0.001 s).
// Slice timing is not derivable from PAR (no per-slice acquisition times): slice_timing_s stays empty.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "core/dicom/par_rec_header.hpp"
#include "scanner/assemble/dicom_volume.hpp"

namespace rtf::dicom {

enum class ParScaling {
  kAsDcm2niix,     // FP where the kept images share one scaling, DV where it varies (see above)
  kDisplayValue,   // DV = PV * RS + RI
  kFloatingPoint,  // FP = DV / (RS * SS), in double precision
};

struct ParRecOptions {
  std::optional<int> image_type;  // image_type_mr to keep; default: 0 (magnitude) if present, else the lowest present
  ParScaling scaling = ParScaling::kAsDcm2niix;
};

// The pair is not (yet) whole: the PAR has no END OF DATA DESCRIPTION FILE line, or the REC is missing or shorter than
// the PAR's images need. A watcher can catch this type, wait and try again; other problems throw ParError.
class ParRecIncomplete : public ParError {
 public:
  ParRecIncomplete(const std::filesystem::path& file, const std::string& problem, std::uintmax_t expected_bytes,
                   std::uintmax_t actual_bytes);
  std::uintmax_t expected_bytes() const { return expected_bytes_; }
  std::uintmax_t actual_bytes() const { return actual_bytes_; }

 private:
  std::uintmax_t expected_bytes_, actual_bytes_;
};

// The REC beside a PAR: same stem, extension .REC or .rec (whichever exists; .REC's case of the PAR otherwise).
std::filesystem::path rec_path_for(const std::filesystem::path& par);

// The image type par_rec_volume keeps by default. Throws ParError for a header without image lines.
int default_image_type(const ParHeader& header);

// Throws ParRecIncomplete (see above), or ParError for a malformed pair: unknown image type asked for, more than one
// image per slice of the kept type (several dynamics or echoes), missing or repeated slices, sizes or bit depth that
// vary, pixel bits other than 8 or 16, unknown slice orientation, missing "Off Centre midslice", a REC longer than
// the PAR describes, a "PAR" of more than 64 MiB (not read: no PAR is that large).
DicomVolume par_rec_volume(const std::filesystem::path& par, const ParRecOptions& options = {});

}  // namespace rtf::dicom
