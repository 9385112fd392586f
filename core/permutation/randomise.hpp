// `rtfmri randomise`: FSL randomise's options and the whole command (cli/cmd_randomise.cpp declares the options):
// permutation inference on the device, t statistics of each contrast, with -x the voxel-wise uncorrected and
// family-wise corrected (max-T) p maps, with -c / -C the cluster-extent / cluster-mass FWE p maps, with -T TFCE, as
// 1 - p, named as randomise names them. Freedman-Lane for general designs, sign flipping for -1, exhaustive
// enumeration when the distinct rearrangements are no more than -n. The rearrangements are spread in chunks over the
// devices and MPI ranks (core/permutation/permutation_chunks.hpp, core/scale/scale_out.hpp), rank 0 writing every
// output. docs/algorithms/randomise.md, docs/scale.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/permutation/tfce.hpp"
#include "core/scale/workers_opening.hpp"

namespace rtf {

struct RandomiseOptions {
  std::vector<std::string> inputs;  // -i: one 4D image, or one 3D image per subject
  std::string output, design, contrasts, f_contrasts, groups, mask;
  bool one_sample = false, voxelwise = false, tfce = false, demean = false;
  double cluster_extent = std::nan(""), cluster_mass = std::nan("");  // NaN: not asked for
  int permutations = 5000;
  uint64_t seed = 0;
  // TFCE's parameters, as randomise names them (--T2: TBSS's 2D setting, E 1).
  double tfce_h = TfceStatistics::kDefaultH, tfce_e = TfceStatistics::kDefaultE;
  int tfce_c = 26;
  bool tfce_2d = false;
};

// Reads and checks every input before any computation or output (rank 0 reads the files; other ranks get copies),
// runs every contrast's rearrangements on every rank, then rank 0 writes PREFIX_* (all or none: a run stopped midway
// leaves its chunk files in PREFIX_chunks/, which the same command run again reuses). Throws std::invalid_argument for
// inconsistent options or inputs.
void run_randomise(const RandomiseOptions& options, const DeviceChoice& devices);

}  // namespace rtf
