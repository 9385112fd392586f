// Writes a phantom to a directory: bold.nii.gz (+ bold.json), the ground-truth maps and text files, and phantom.json
// with every parameter, the conventions and the achieved tSNR. File list: docs/algorithms/phantom.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/phantom/phantom.hpp"

namespace rtf::sim {

struct WriteReport {
  std::vector<std::filesystem::path> files;
  int64_t clipped = 0;  // bold voxels outside the int16 range (clamped by the writer)
  double seconds = 0.0;
};

// phantom.json's content (also used by tests).
std::string phantom_json(const PhantomResult& result, int64_t clipped);

// Creates `dir` if needed; throws std::runtime_error (or NiftiError) naming the file that could not be written.
WriteReport write_phantom(const PhantomResult& result, const std::filesystem::path& dir);

}  // namespace rtf::sim
