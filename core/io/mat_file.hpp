// MATLAB level-5 MAT-files (what MATLAB's `save -v6`/`-v7` and Octave's `save -6` write), the subset
// needed for reference numbers: real numeric matrices (stored as any MAT numeric type, returned as double)
// and cell arrays of them, uncompressed or zlib-compressed (miCOMPRESSED), little-endian. Structs,
// objects, character, sparse and complex arrays are listed with kind kUnsupported rather than read.
// Malformed input gives ArrayFileError, never a crash; nesting and sizes are bounded.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/array_file.hpp"

namespace rtf::io {

struct MatArray {
  enum class Kind { kNumeric, kCell, kUnsupported };
  Kind kind = Kind::kUnsupported;
  int mat_class = 0;            // the MAT class code (mxDOUBLE_CLASS = 6, mxCELL_CLASS = 1, ...)
  std::vector<int64_t> dims;    // at least two
  std::vector<double> values;   // kNumeric: column-major (MATLAB order)
  std::vector<MatArray> cells;  // kCell: column-major

  int64_t numel() const;
  // kNumeric with at most two dimensions, as a matrix; throws ArrayFileError otherwise.
  Eigen::MatrixXd matrix() const;
};

// Parses a whole MAT-file; `source` names it in error messages. Returns the top-level variables by name.
std::map<std::string, MatArray> parse_mat(std::span<const uint8_t> bytes, std::string_view source);

std::map<std::string, MatArray> read_mat(const std::filesystem::path& path);

}  // namespace rtf::io
