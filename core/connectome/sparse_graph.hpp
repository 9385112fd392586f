// The thresholded connectome as an undirected weighted graph (docs/algorithms/connectome.md): scipy.sparse's CSR
// layout with both directions of every edge (row i lists j and row j lists i, column indices ascending), written as
// scipy.sparse.save_npz writes it (indices, indptr, format, shape, data: readable by scipy.sparse.load_npz); degree
// (edges per node) and strength (sum of the edges' r per node).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/connectome/thresholded_correlation.hpp"

namespace rtf {

struct SymmetricCsr {
  int64_t n = 0;
  std::vector<int64_t> indptr;   // n + 1
  std::vector<int32_t> indices;  // 2 E
  std::vector<float> data;       // 2 E
  int64_t edges() const { return static_cast<int64_t>(indices.size()) / 2; }
};

// `edges`: each pair once (i < j), any order. Throws std::invalid_argument for a node index outside 0..n-1 or i == j.
SymmetricCsr symmetric_csr(int64_t n, const std::vector<Edge>& edges);

std::vector<int64_t> degree(const SymmetricCsr& g);
std::vector<double> strength(const SymmetricCsr& g);

// scipy.sparse.save_npz's layout (uncompressed): indptr and indices as int32 when 2 E < 2^31, else int64.
void write_csr_npz(const std::filesystem::path& path, const SymmetricCsr& g);

}  // namespace rtf
