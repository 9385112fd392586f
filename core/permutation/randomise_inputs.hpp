// randomise's inputs read and checked (core/permutation/randomise.hpp): the subjects' images, the design, the t and F
// contrasts as permutation models, the exchangeability blocks and the analysed voxels' values.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "core/image/image.hpp"
#include "core/permutation/randomise.hpp"
#include "core/permutation/t_contrast_model.hpp"
#include "core/scale/scale_out.hpp"

namespace rtf {

struct RandomiseInputs {
  ImageHeader grid;  // the subjects' grid (the outputs')
  int subjects = 0;
  Eigen::MatrixXd design;              // demeaned with -D
  std::vector<TContrastModel> models;  // the t contrasts, then the F tests
  std::vector<std::string> names;      // per model: "group mean", the contrast's name, "F of contrasts 1, 2"
  std::vector<std::string> suffixes;   // per model: "tstat1", ..., "fstat1", ...
  std::vector<int> blocks;             // -e: per subject (empty: one block)
  std::vector<int64_t> voxels;         // analysed voxels (full-grid indices)
  std::vector<float> values;           // [subject][voxel of `voxels`], demeaned per voxel with -D
};

// Throws std::invalid_argument for options that contradict each other (-1 with -d/-t/-e/-f, a missing design, a
// cluster-forming threshold that is not a positive t).
void check_randomise_options(const RandomiseOptions& options);

// Every rank calls it (Ranks::local_input for each file, in the same order). Throws std::invalid_argument naming the
// file for inputs that disagree (rows, columns, grids), a non-finite value inside the mask, an empty mask.
RandomiseInputs read_randomise_inputs(const RandomiseOptions& options, const ScaleOut& scale);

}  // namespace rtf
