// Slice acquisition timing: named slice orders (ascending, descending, interleaved, Siemens
// interleaved), BIDS SliceTiming lists read from a JSON sidecar or a text file, validation, and the
// choice of reference slice. Slices are along the image's third axis (z); times are seconds from
// the start of each volume's acquisition, in [0, TR). See docs/algorithms/slice_timing.md.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rtf {

enum class SliceOrder {
  kAscending,          // 0, 1, 2, ..., n-1
  kDescending,         // n-1, ..., 1, 0
  kInterleaved,        // 0, 2, 4, ... then 1, 3, 5, ... (1-based: odd slices first)
  kInterleavedSiemens  // as kInterleaved for odd n; for even n: 1, 3, 5, ... then 0, 2, 4, ...
};

// "ascending", "descending", "interleaved", "interleaved-siemens"; anything else throws
// std::invalid_argument naming the accepted values.
SliceOrder parse_slice_order(std::string_view name);
std::string to_string(SliceOrder order);

// Slice indices in the order they are acquired: result[k] is the slice acquired k-th.
std::vector<int> acquisition_order(SliceOrder order, int num_slices);

// Acquisition time of every slice: the slice acquired k-th of n gets k * TR / n.
std::vector<double> slice_times(SliceOrder order, int num_slices, double tr_s);

// BIDS "SliceTiming" (seconds, one per slice) from JSON text; throws std::invalid_argument when the
// key is missing or is not an array of numbers.
std::vector<double> parse_slice_timing_json(std::string_view json_text);
// Whitespace/comma-separated numbers (a '#' starts a comment to the end of the line).
std::vector<double> parse_slice_timing_text(std::string_view text);
// A ".json" file is read as a BIDS sidecar, anything else as a text file of numbers.
std::vector<double> read_slice_timing(const std::filesystem::path& file);

// Throws std::invalid_argument unless TR > 0, times.size() == num_slices and every time is in [0, TR).
void validate_slice_times(std::span<const double> times, int num_slices, double tr_s);

// The default reference slice: the one acquired at position n/2 (integer division) when slices are
// sorted by acquisition time (ties, as in multiband, broken by slice index), like SPM's middle slice.
int default_reference_slice(std::span<const double> times);

// The reference time: times[ref_slice] if given, else ref_time_s if given, else the default
// reference slice's time. Throws std::invalid_argument for an out-of-range slice or a time outside
// [0, TR), or when both are given.
double reference_time(std::span<const double> times, double tr_s, std::optional<int> ref_slice,
                      std::optional<double> ref_time_s);

}  // namespace rtf
