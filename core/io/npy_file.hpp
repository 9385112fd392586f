// NumPy .npy arrays and .npz archives of them, for reading reference numbers saved by Python tools.
// Supported: format versions 1-3, dtype little-endian float64 ('<f8'), C or Fortran order, any rank.
// Anything else (other dtypes, object arrays, pickles, truncation) is refused with ArrayFileError.
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

struct NpyArray {
  std::vector<int64_t> shape;  // empty for a 0-d array (one value)
  std::vector<double> values;  // C order (last index fastest), whatever the file's order

  // The array as a matrix: rank 2 as is, rank 1 as one column, rank 0 as 1x1. Throws ArrayFileError for
  // higher ranks.
  Eigen::MatrixXd matrix() const;
};

// Parses one .npy file's bytes; `source` names it in error messages.
NpyArray parse_npy(std::span<const uint8_t> bytes, std::string_view source);

NpyArray read_npy(const std::filesystem::path& path);

// Every array of a .npz archive, keyed by member name without its ".npy" suffix (np.savez's keyword names).
std::map<std::string, NpyArray> read_npz(const std::filesystem::path& path);

}  // namespace rtf::io
