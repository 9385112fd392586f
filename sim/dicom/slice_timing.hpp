// Slice times for `rtfmri sim dicom` (issue 18): from a NIfTI file's own slice_code / slice_duration (nifti1.h's
// NIFTI_SLICE_* orders over slice_start .. slice_end along the slice dimension, which must be the third or unset), else
// from a named order spread evenly over the TR. Times are seconds from the volume's start, one per slice k = 0 .. nz
// - 1.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace rtf::sim {

// ascending: 0, 1, 2, ...; descending: nz - 1, ..., 0; interleaved: 0, 2, 4, ..., then 1, 3, ... (NIfTI ALT_INC);
// siemens-interleaved: as interleaved for an odd slice count, else 1, 3, 5, ..., then 0, 2, ... (NIfTI ALT_INC2).
enum class SliceOrder { kNone, kAscending, kDescending, kInterleaved, kSiemensInterleaved };

// Throws std::invalid_argument for a name other than none/ascending/descending/interleaved/siemens-interleaved.
SliceOrder parse_slice_order(std::string_view name);

// `nz` slices acquired in `order`, tr_s / nz apart; empty for kNone.
std::vector<double> slice_timing(SliceOrder order, int64_t nz, double tr_s);

// The slice times the NIfTI header of `path` (.nii or .nii.gz, NIfTI-1 or -2) declares for its `nz` slices: nullopt
// where slice_code or slice_duration is 0. Throws std::runtime_error naming the file when it cannot be read, and
// std::invalid_argument when its slice dimension is not the third or its slice code is unknown.
std::optional<std::vector<double>> nifti_slice_timing(const std::filesystem::path& path, int64_t nz);

// The BIDS sidecar of a NIfTI file: X.json beside X.nii or X.nii.gz.
std::filesystem::path bids_sidecar(const std::filesystem::path& nifti);

// Its "SliceTiming" (seconds, one per slice): nullopt where there is no sidecar or it has no SliceTiming. Throws
// std::invalid_argument naming the sidecar when it is not JSON, or SliceTiming is not `nz` numbers in [0, tr_s).
std::optional<std::vector<double>> bids_slice_timing(const std::filesystem::path& nifti, int64_t nz, double tr_s);

}  // namespace rtf::sim
