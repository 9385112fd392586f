// `rtfmri qa BOLD --out PREFIX` and `rtfmri qa SESSION_DIR`'s work: the data quality of a whole 4D run on the device
// (docs/algorithms/qa.md):
// per volume the global signal, DVARS, AFNI 3dToutcount's outlier fraction, 3dTqual's quality index and the slice
// z-scores; per voxel the mean, SD and tSNR maps; and a summary with MRIQC's names (tsnr, aor, aqi).
// PREFIX_ below is PREFIX followed by "_", or for a session each runs/<run>/ folder:
//   PREFIX_qa.tsv     one row per volume (columns in docs/algorithms/qa.md)
//   PREFIX_qa.json    the summary: volumes, mask voxels, tsnr (median over the mask), aor, aqi, dvars, flagged slices;
//                     with --motion fd_mean, fd_num, fd_perc (MRIQC's) and the usable-data tally
//   PREFIX_qa_mean.nii.gz, PREFIX_qa_sd.nii.gz, PREFIX_qa_tsnr.nii.gz, PREFIX_qa_mask.nii.gz, PREFIX_qa_report.html
// (core/qa/qa_outputs.hpp).
#pragma once

#include <string>
#include <vector>

#include "core/device/device_opener.hpp"
#include "core/qa/motion_filter.hpp"
#include "core/qa/qa_outputs.hpp"
#include "core/qa/slice_zscores.hpp"
#include "core/qa/usable_frames.hpp"

namespace rtf {

struct QaCommandOptions {
  std::string input;  // 4D NIfTI, at least 2 volumes
  std::string mask;   // "": a brain mask of the mean volume (core/mask/brain_mask.hpp); else one on the input's grid
  std::string out;    // output prefix; ending in '/': files named qa.tsv ... in that folder
  SliceZScoreOptions slices;
  // With a motion file (rtfmri's motion.tsv / _fd.tsv, or FSL's .par; one row per volume): FD (Power, 50 mm) after
  // the respiration filter, and FIRMM's usable-data tally per threshold.
  std::string motion;
  double tr_s = 0.0;  // 0: the header's
  FdFilterOptions fd_filter;
  std::vector<double> fd_thresholds{0.2, 0.3, 0.5};
  double target_minutes = 12.5;
  CensorRule censor = CensorRule::kFirmm;
};

// Throws std::invalid_argument for a 3D input, a mask on another grid or an empty mask, before anything is written.
void run_qa_command(const QaCommandOptions& options, const DeviceOpener& open_device);

// options.input a recorded session (rtfmri run's SESSION_DIR): every runs/<run>/bold.nii.gz, its files written into
// runs/<run>/ (qa.tsv, qa.json, qa_*.nii.gz), with runs/<run>/motion.tsv as the motion where it exists and --motion
// is not given. Throws std::invalid_argument for a folder without runs.
void run_qa_session(const QaCommandOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
