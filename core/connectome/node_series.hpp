// The nodes of a voxel-wise connectome and their series prepared for correlation (docs/algorithms/connectome.md): one
// node per mask voxel, its series minus its mean divided by its norm, so that Pearson's r of two nodes is the dot
// product of their series; for Spearman the same of the series' average ranks (ties share the mean of their ranks,
// as scipy.stats.spearmanr). A constant series has no correlation: the node is kept (it has a voxel) but marked
// invalid, and gets no edges.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/device/device.hpp"
#include "core/image/image.hpp"

namespace rtf {

enum class CorrelationMethod { kPearson, kSpearman };

struct NodeSeries {
  CorrelationMethod method = CorrelationMethod::kPearson;
  bool normalised = false;      // false: z holds the raw series (normalise_on_device does the rest)
  std::vector<int64_t> voxels;  // node -> full-grid voxel index (x fastest)
  int64_t length = 0;           // L, volumes
  int64_t padded = 0;           // L rounded up to 16 (the device's step); the padding is 0
  std::vector<float> z;         // [N][padded]: normalised series (0 for invalid nodes)
  std::vector<uint8_t> valid;   // [N]: 0 for a constant series
  size_t nodes() const { return voxels.size(); }
};

// Ranks 1..n of x with ties given the average of their ranks.
std::vector<double> average_ranks(std::span<const double> x);

// `mask`: nonzero = a node, over bold's grid. With `normalise` the ranks and normalisation are done here (in double);
// without, z holds the raw series for normalise_on_device. Throws std::invalid_argument for a 3D image, fewer than 3
// volumes, a mask of another size, an empty mask, or non-finite values in a masked series (naming the voxel).
NodeSeries node_series(const Image& bold, const std::vector<uint8_t>& mask, CorrelationMethod method,
                       bool normalise = true);

// The longest series normalise_on_device takes (two copies in local memory); longer ones are normalised on the host.
constexpr int64_t kMaxDeviceSeriesLength = 4096;

// The device memory the node series may take: `series_bytes` when positive, else the smaller of the device's largest
// allocation and 40% of its global memory.
int64_t series_memory_budget(const Device& device, int64_t series_bytes = 0);

// Ranks (Spearman), centring and normalising on the device (kernels/node_normalise.cl): one work-group per node, in
// chunks of nodes when N x padded floats exceed series_memory_budget(device, series_bytes). Falls back to the host for
// series longer than kMaxDeviceSeriesLength. No-op when already normalised. Throws std::invalid_argument for a budget
// below one node's series.
void normalise_on_device(Device& device, NodeSeries& series, int64_t series_bytes = 0);

}  // namespace rtf
