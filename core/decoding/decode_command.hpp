// `rtfmri decode BOLD... --events EVENTS... --out PREFIX`'s work (cli/cmd_decode.cpp declares the options): a linear
// decoder trained on the device and cross-validated (docs/algorithms/decoding.md). Each BOLD file is a run, labelled by
// its own events file; the features are a mask's voxels, detrended and z-scored per run; the folds leave out a run, a
// block or a k-th of the samples; an optional permutation test of the accuracy rearranges the labels within runs.
// Writes (core/decoding/decode_outputs.hpp) PREFIX_predictions.tsv, _folds.tsv, _confusion.tsv, _weights.nii.gz,
// _model.json (the model fitted to every sample, in the format the live server reads), _decode.json and, with
// permutations, _null_accuracy.txt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/decoding/decoding_samples.hpp"
#include "core/decoding/linear_model.hpp"
#include "core/decoding/sample_features.hpp"
#include "core/device/device_opener.hpp"

namespace rtf {

struct DecodeOptions {
  std::vector<std::string> bold, events;  // one events file per run
  std::string mask;                       // "": a brain mask of the first run's mean volume
  std::vector<int> mask_labels;           // non-empty: only the mask's voxels of these values (an atlas's regions)
  std::string out;
  std::string model = "logistic", loss = "squared_hinge", cv = "leave-one-run-out";
  int folds = 5;  // k-fold's k
  double tr_s = 0.0;
  SolverOptions solver;
  LabelOptions labels;
  FeatureOptions features;
  int permutations = 0;  // 0: no permutation test; else FSL's count, the observed labels included
  uint64_t seed = 0;
};

// Throws std::invalid_argument for inputs that do not fit (runs on other grids, a 3D run, no TR, a mask on another
// grid or empty, events that label one class, a fold whose training samples lack a class, data the device cannot
// hold), before anything is written.
void run_decode_command(const DecodeOptions& options, const DeviceOpener& open_device);

}  // namespace rtf
