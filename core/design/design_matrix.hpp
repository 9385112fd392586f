// First-level fMRI design matrix as SPM12 builds it (spm_fMRI_design): one regressor per trial type (and per
// basis function and parametric modulator) from events convolved with the canonical HRF on a microtime grid,
// then optional confounds (e.g. the six motion parameters), drift (DCT high-pass set or Legendre
// polynomials) and a constant. Double precision, host side. See docs/algorithms/design.md.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/design/events.hpp"
#include "core/design/hrf_basis.hpp"
#include "core/design/spm_hrf.hpp"

namespace rtf {

enum class DriftModel { kNone, kCosine, kPolynomial };

// What an event's 'modulation' value does.
enum class ModulationModel {
  kParametric,  // SPM's parametric modulation: an extra regressor per modulated trial type (mean-centred
                // when orthogonalising), the main effect stays unmodulated
  kAmplitude,   // scales the event's height (nilearn's 'modulation'); n/a counts as 1
  kIgnore,      // every event has height 1
};

struct DesignOptions {
  double tr_s = 0.0;              // repetition time (required)
  int64_t n_scans = 0;            // volumes in the run (required)
  int microtime_resolution = 16;  // SPM's fMRI_T: time bins per scan
  int microtime_onset = 8;        // SPM's fMRI_T0 (1..T): the bin at which regressors are sampled; SPM12's
                                  // default 8 (mid-volume for T = 16), 1 for the start of each volume
  HrfDerivatives derivatives = HrfDerivatives::kNone;
  SpmHrfParams hrf;                     // SPM's defaults
  std::vector<std::string> conditions;  // trial types to model, in this order; empty: all, sorted
  ModulationModel modulation = ModulationModel::kParametric;
  bool orthogonalise = true;  // SPM's U(i).orth: modulators mean-centred, each trial type's columns serially
                              // orthogonalised (derivatives and modulators against the main effect)
  DriftModel drift = DriftModel::kCosine;
  double highpass_cutoff_s = 128.0;         // kCosine: SPM's default high-pass cutoff
  int polynomial_order = 2;                 // kPolynomial: Legendre P_1..P_order
  Eigen::MatrixXd confounds;                // n_scans x m extra regressors (e.g. motion), or empty
  std::vector<std::string> confound_names;  // m names; empty: confound_1 .. confound_m
  bool demean_confounds = true;             // SPM mean-corrects user regressors (spm_detrend)
  bool add_constant = true;
};

struct DesignColumn {
  enum class Kind { kRegressor, kConfound, kDrift, kConstant };
  std::string name;
  Kind kind = Kind::kRegressor;
  std::string condition;   // kRegressor: the trial type
  int basis = 0;           // kRegressor: 0 canonical HRF, 1 temporal derivative, 2 dispersion derivative
  bool modulated = false;  // kRegressor: the parametric modulator's column
};

struct DesignMatrix {
  Eigen::MatrixXd x;                  // n_scans x columns
  std::vector<DesignColumn> columns;  // same order as x's columns

  std::vector<std::string> names() const;
  std::optional<Eigen::Index> find(std::string_view name) const;
};

// Column names: "<trial>" (canonical), "<trial>_derivative", "<trial>_dispersion"; modulators
// "<trial>_x_modulation" (+ "_derivative", "_dispersion"); then the confound names, "drift_1".."drift_K", and
// "constant". Column order: trial types (each: main effect's basis columns, then the modulator's), confounds,
// drift, constant.
//
// Throws std::invalid_argument for invalid options (TR, scans, microtime, cutoff, order), a listed condition
// without events, a trial type with modulation values on some events but n/a on others or a constant
// modulation (kParametric), confounds of the wrong size or non-finite, or duplicate column names.
DesignMatrix build_design_matrix(const std::vector<Event>& events, const DesignOptions& options);

// Conventional names for the six rigid motion parameters (fMRIPrep's): trans_x, trans_y, trans_z, rot_x,
// rot_y, rot_z.
std::vector<std::string> motion_confound_names();

}  // namespace rtf
