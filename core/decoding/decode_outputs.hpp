// The files of `rtfmri decode` (docs/algorithms/decoding.md has their columns and the model file's format):
//   PREFIX_predictions.tsv  one row per sample: run, volume, block, label, fold, predicted, decision value(s) and, for
//                           the logistic model, every class's probability
//   PREFIX_folds.tsv        one row per fold: what it left out, its sizes, accuracy, balanced accuracy, solver
//   PREFIX_confusion.tsv    true class (rows) x predicted class (columns), summed over the folds
//   PREFIX_weights.nii.gz   the final model's weights on the BOLD grid (one volume per decision function)
//   PREFIX_model.json       the final model in the "rtfmri-decoder" format
//   PREFIX_decode.json      the summary
//   PREFIX_null_accuracy.txt  the permutation test's accuracies, the observed first (with permutations)
#pragma once

#include <Eigen/Core>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/decoding/cross_validation.hpp"
#include "core/decoding/decoder_model_file.hpp"
#include "core/decoding/decoding_permutation.hpp"
#include "core/decoding/decoding_samples.hpp"
#include "core/decoding/linear_model.hpp"
#include "core/image/image.hpp"
#include "core/io/output_set.hpp"

namespace rtf {

struct DecodeResult {
  DecoderModel model = DecoderModel::kLogistic;
  DecodingSamples samples;
  std::vector<std::string> fold_names;  // what each fold left out ("run 2", "block 7", "samples 0-39")
  std::vector<int64_t> fold_train_sizes;
  CvResult cv;
  DecoderModelFile final_model;  // fitted to every sample: its weights over the features, the mask, preprocessing
  bool final_converged = true;
  int final_iterations = 0;
  ImageHeader grid;  // the runs' grid (3D)
  const DecodingPermutations* permutations = nullptr;
  nlohmann::json settings;  // options and preprocessing, copied into the model file and the summary
  nlohmann::json timing;    // seconds per phase
};

// The summary written to PREFIX_decode.json (also printed in part).
nlohmann::json decode_summary(const DecodeResult& r);

// Adds every file to `outputs` and writes it (committed by the caller).
void write_decode_files(const DecodeResult& r, const std::string& prefix, io::OutputSet& outputs);

}  // namespace rtf
