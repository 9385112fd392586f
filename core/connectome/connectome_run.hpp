// `rtfmri connectome BOLD (--threshold R | --density D) --out PREFIX`, the whole command (cli/cmd_connectome.cpp
// declares the options): the voxel-wise connectome of a 4D NIfTI on the device (Pearson, Spearman or Kendall's tau-b
// between every pair of mask voxels, thresholded by value or density), written as scipy.sparse's CSR .npz with the
// node -> voxel map, degree and strength maps and a JSON summary. The pairs are spread over the devices and MPI ranks
// in chunks of tile rows (core/connectome/connectome_chunks.hpp); rank 0 writes the outputs.
// docs/algorithms/connectome.md, docs/scale.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "core/scale/workers_opening.hpp"

namespace rtf {

struct ConnectomeOptions {
  std::string bold, mask, out;      // mask empty: the brain mask of the mean volume
  std::string method = "pearson";   // pearson, spearman, kendall
  std::string chunk_dir;            // empty: PREFIX_chunks; "none": no chunk files
  double threshold = std::nan("");  // r >= R (|r| with absolute)
  double density = std::nan("");    // or the fraction D of the pairs with the largest r
  bool absolute = false;
  uint64_t seed = 1;  // of the node sample that estimates the density's cut
};

// Throws std::invalid_argument for neither or both of threshold and density, values out of range, too short a series,
// or a density whose edges would not fit in the host's memory. Prints the one-line summary.
void run_connectome(const ConnectomeOptions& options, const DeviceChoice& devices);

}  // namespace rtf
