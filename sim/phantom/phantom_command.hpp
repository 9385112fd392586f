// `rtfmri sim phantom`'s work: the phantom's spec completed from the command line's text options (grid, voxel size,
// centre, baselines, motion, regions, events, noise), the phantom made and written, and a summary line on stdout
// (docs/algorithms/phantom.md).
#pragma once

#include <string>
#include <vector>

#include "sim/phantom/phantom_spec.hpp"

namespace rtf::sim {

struct PhantomCommandOptions {
  std::string out;                   // output directory
  std::string template_path;         // "": Colin27's brain from the installed data
  std::string grid = "64x64x33";     // NXxNYxNZ
  std::string voxel = "3";           // mm: one number, or AxBxC
  std::string centre;                // "": on the brain; else x,y,z world mm
  std::string baseline;              // "": the spec's; else CSF,GM,WM
  std::string motion = "realistic";  // none, drift or realistic
  std::string motion_file;           // a motion.tsv or an FSL .par, over `motion`
  std::string events_file;           // a BIDS events.tsv (implies the events design)
  std::string noise = "rician";      // rician or gaussian
  std::string datatype = "int16";    // of bold.nii.gz: int16 or float32
  std::vector<std::string> regions;  // x,y,z,radius[,trial_type[,psc]]
  bool no_noise = false;             // no thermal, physiological or drift component
  PhantomSpec spec;                  // the rest, as given
};

// Makes and writes the phantom. Throws std::invalid_argument for malformed text options.
void run_phantom_command(const PhantomCommandOptions& options);

}  // namespace rtf::sim
