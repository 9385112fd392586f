// Assembly of the first-level design: per-trial-type inputs (main effect, modulator), SPM's stimulus functions,
// convolution, within-trial-type orthogonalisation, then confounds, drift and the constant.
#include "core/design/design_matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "core/design/drift.hpp"
#include "core/design/spm_orth.hpp"
#include "core/design/stimulus.hpp"

namespace rtf {
namespace {

constexpr const char* kBasisSuffix[] = {"", "_derivative", "_dispersion"};

struct TrialType {
  std::vector<double> onsets, durations;
  std::vector<std::optional<double>> modulation;
};

// The inputs matrix of one trial type (events x inputs): SPM's u = [1, P] (spm_get_ons), or amplitudes.
Eigen::MatrixXd trial_inputs(const std::string& name, const TrialType& t, const DesignOptions& options) {
  const auto n = static_cast<Eigen::Index>(t.onsets.size());
  const bool any_value = std::any_of(t.modulation.begin(), t.modulation.end(), [](const auto& m) { return m; });
  if (options.modulation == ModulationModel::kIgnore || !any_value) return Eigen::MatrixXd::Ones(n, 1);
  if (options.modulation == ModulationModel::kAmplitude) {
    Eigen::MatrixXd u(n, 1);
    for (Eigen::Index e = 0; e < n; ++e) u(e, 0) = t.modulation[static_cast<size_t>(e)].value_or(1.0);
    return u;
  }
  Eigen::MatrixXd u(n, 2);
  for (Eigen::Index e = 0; e < n; ++e) {
    const auto& m = t.modulation[static_cast<size_t>(e)];
    if (!m) {
      throw std::invalid_argument(fmt::format(
          "design: trial type '{}' has modulation values on some events and n/a on others (event {} of the type)", name,
          e + 1));
    }
    u(e, 0) = 1.0;
    u(e, 1) = *m;
  }
  if (options.orthogonalise) {
    u = spm_orth(u);  // the modulator minus its mean
    if (u.col(1).isZero(0.0)) {
      throw std::invalid_argument(
          fmt::format("design: the modulation of trial type '{}' is the same on every event, so it cannot be "
                      "separated from the main effect",
                      name));
    }
  }
  return u;
}

DesignColumn plain_column(std::string name, DesignColumn::Kind kind) {
  DesignColumn c;
  c.name = std::move(name);
  c.kind = kind;
  return c;
}

void check_options(const DesignOptions& o) {
  MicrotimeGrid{o.tr_s, o.n_scans, o.microtime_resolution, o.microtime_onset}.validate();
  if (o.confounds.size() > 0) {
    if (o.confounds.rows() != o.n_scans) {
      throw std::invalid_argument(
          fmt::format("design: confounds have {} rows for {} scans", o.confounds.rows(), o.n_scans));
    }
    if (!o.confounds.allFinite()) throw std::invalid_argument("design: confounds contain NaN or infinity");
  }
  if (!o.confound_names.empty() && static_cast<Eigen::Index>(o.confound_names.size()) != o.confounds.cols()) {
    throw std::invalid_argument(
        fmt::format("design: {} confound names for {} confound columns", o.confound_names.size(), o.confounds.cols()));
  }
}

}  // namespace

std::vector<std::string> DesignMatrix::names() const {
  std::vector<std::string> out;
  out.reserve(columns.size());
  for (const DesignColumn& c : columns) out.push_back(c.name);
  return out;
}

std::optional<Eigen::Index> DesignMatrix::find(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return static_cast<Eigen::Index>(i);
  }
  return std::nullopt;
}

DesignMatrix build_design_matrix(const std::vector<Event>& events, const DesignOptions& options) {
  check_options(options);
  const MicrotimeGrid grid{options.tr_s, options.n_scans, options.microtime_resolution, options.microtime_onset};
  const Eigen::MatrixXd basis = spm_hrf_basis(grid.dt_s(), options.derivatives, options.hrf);

  const std::vector<std::string> conditions = options.conditions.empty() ? trial_types(events) : options.conditions;
  std::vector<Eigen::MatrixXd> blocks;
  std::vector<DesignColumn> columns;
  for (const std::string& name : conditions) {
    TrialType t;
    for (const Event& e : events) {
      if (e.trial_type != name) continue;
      t.onsets.push_back(e.onset_s);
      t.durations.push_back(e.duration_s);
      t.modulation.push_back(e.modulation);
    }
    if (t.onsets.empty()) throw std::invalid_argument(fmt::format("design: condition '{}' has no events", name));
    const Eigen::MatrixXd inputs = trial_inputs(name, t, options);
    Eigen::MatrixXd x = convolve_and_sample(spm_stimulus_functions(t.onsets, t.durations, inputs, grid), basis, grid);
    if (options.orthogonalise) {
      x = spm_orth(x);  // all of the trial type's columns, in order
    } else {
      for (Eigen::Index u = 0; u < inputs.cols(); ++u) {  // each input's basis columns among themselves
        x.middleCols(u * basis.cols(), basis.cols()) = spm_orth(x.middleCols(u * basis.cols(), basis.cols()));
      }
    }
    blocks.push_back(x);
    for (Eigen::Index u = 0; u < inputs.cols(); ++u) {
      for (Eigen::Index p = 0; p < basis.cols(); ++p) {
        const bool modulated = options.modulation == ModulationModel::kParametric && u == 1;
        columns.push_back({.name = fmt::format("{}{}{}", name, modulated ? "_x_modulation" : "", kBasisSuffix[p]),
                           .kind = DesignColumn::Kind::kRegressor,
                           .condition = name,
                           .basis = static_cast<int>(p),
                           .modulated = modulated});
      }
    }
  }

  if (options.confounds.cols() > 0) {
    Eigen::MatrixXd c = options.confounds;
    if (options.demean_confounds) c.rowwise() -= c.colwise().mean();
    blocks.push_back(c);
    for (Eigen::Index j = 0; j < c.cols(); ++j) {
      columns.push_back(plain_column(options.confound_names.empty() ? fmt::format("confound_{}", j + 1)
                                                                    : options.confound_names[static_cast<size_t>(j)],
                                     DesignColumn::Kind::kConfound));
    }
  }

  Eigen::MatrixXd drift(options.n_scans, 0);
  if (options.drift == DriftModel::kCosine)
    drift = spm_dct_drift(options.n_scans, options.tr_s, options.highpass_cutoff_s);
  if (options.drift == DriftModel::kPolynomial) drift = legendre_drift(options.n_scans, options.polynomial_order);
  if (drift.cols() > 0) blocks.push_back(drift);
  for (Eigen::Index k = 0; k < drift.cols(); ++k) {
    columns.push_back(plain_column(fmt::format("drift_{}", k + 1), DesignColumn::Kind::kDrift));
  }

  if (options.add_constant) {
    blocks.push_back(Eigen::MatrixXd::Ones(options.n_scans, 1));
    columns.push_back(plain_column("constant", DesignColumn::Kind::kConstant));
  }

  std::set<std::string_view> seen;
  for (const DesignColumn& c : columns) {
    if (!seen.insert(c.name).second) {
      throw std::invalid_argument(
          fmt::format("design: two columns are named '{}' (rename the trial type or confound)", c.name));
    }
  }

  DesignMatrix design;
  design.x.resize(options.n_scans, static_cast<Eigen::Index>(columns.size()));
  Eigen::Index at = 0;
  for (const Eigen::MatrixXd& b : blocks) {
    design.x.middleCols(at, b.cols()) = b;
    at += b.cols();
  }
  design.columns = std::move(columns);
  return design;
}

std::vector<std::string> motion_confound_names() {
  return {"trans_x", "trans_y", "trans_z", "rot_x", "rot_y", "rot_z"};
}

}  // namespace rtf
