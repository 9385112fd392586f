// `rtfmri bedpost DIR`: FSL bedpostx's ball-and-stick MCMC on the device, the whole command (cli/cmd_bedpost.cpp
// declares the options). Reads DIR/data, bvals, bvecs and nodif_brain_mask as bedpostx does; cuts the mask voxels into
// blocks spread over the devices and MPI ranks (core/scale/scale_out.hpp); each block is started on its device
// (tensor, then a Levenberg-Marquardt fit in double: core/diffusion/ball_stick_start.hpp; on the host's cores with
// host_start or without fp64) and its chains run (core/diffusion/ball_stick_mcmc.hpp: streams keyed by the voxel's
// index in the whole mask, so any split gives the same chains). Rank 0 writes DIR.bedpostX with FSL's file names,
// built as DIR.bedpostX.partial (the finished blocks kept in its chunks/ folder, reused by a run started again) and
// renamed when complete. docs/algorithms/bedpost.md, docs/scale.md.
#pragma once

#include <string>

#include "core/diffusion/ball_stick_model.hpp"
#include "core/scale/workers_opening.hpp"

namespace rtf {

struct BedpostOptions {
  std::string dir;  // bedpostx's input folder
  std::string out;  // empty: DIR.bedpostX
  BallStickOptions chains;
  int chunk_voxels = 0;     // 0: from the devices (bedpost_blocks)
  bool host_start = false;  // the starting states on the host's cores instead of the devices
};

// Throws std::invalid_argument for an existing output folder or options out of range; prints the one-line summary.
void run_bedpost(const BedpostOptions& options, const DeviceChoice& devices);

}  // namespace rtf
