// The thresholded connectome as an undirected weighted graph (docs/algorithms/connectome.md): scipy.sparse's CSR
// layout with both directions of every edge (row i lists j and row j lists i, column indices ascending), written as
// scipy.sparse.save_npz writes it (indices, indptr, format, shape, data: readable by scipy.sparse.load_npz); degree
// (edges per node) and strength (sum of the edges' r per node). Built and written on all the host's threads, without
// copies of the 2 E arrays (1e10 values at N = 1e6 and density 0.01).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "core/connectome/thresholded_correlation.hpp"
#include "core/io/npz_writer.hpp"
#include "core/util/host_array.hpp"

namespace rtf {

template <typename T>
using EdgeArray = HostArray<T>;

struct SymmetricCsr {
  int64_t n = 0;
  std::vector<int64_t> indptr;  // n + 1
  EdgeArray<int32_t> indices;   // 2 E
  EdgeArray<float> data;        // 2 E
  int64_t edges() const { return static_cast<int64_t>(indices.size()) / 2; }
};

// `edges`: each pair once (i < j), any order; sorted by (i, j) (as the connectome gives them) no row needs sorting.
// Throws std::invalid_argument naming the first edge (in the list's order) with a node index outside 0..n-1 or
// i == j. `workers` 0: the host's threads; the result does not depend on it.
SymmetricCsr symmetric_csr(int64_t n, std::span<const Edge> edges, size_t workers = 0);

std::vector<int64_t> degree(const SymmetricCsr& g, size_t workers = 0);
std::vector<double> strength(const SymmetricCsr& g, size_t workers = 0);

// scipy.sparse.save_npz's layout (uncompressed): indptr and indices as int32 when 2 E < 2^31 - 1, else int64
// (`force_int64` takes the int64 layout for any size: tests). The arrays are written from `g` without copies (the
// int64 indices widened block by block); `options` as io::write_npz's.
void write_csr_npz(const std::filesystem::path& path, const SymmetricCsr& g, bool force_int64 = false,
                   const io::NpzWriteOptions& options = {});

}  // namespace rtf
