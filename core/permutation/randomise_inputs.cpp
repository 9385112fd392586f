// randomise's inputs: the subjects' images joined into one series, the design and contrasts from FSL VEST files (or
// the group mean of -1), the analysed voxels' values with -D's demeaning, and a permutation model per t contrast and
// F test.
#include "core/permutation/randomise_inputs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/image/same_grid.hpp"
#include "core/io/nifti_io.hpp"
#include "core/permutation/vest.hpp"

namespace rtf {

namespace {

// The subjects: one 4D image, or several 3D images on one grid (one per subject), in order.
Image read_subjects(const std::vector<std::string>& inputs) {
  if (inputs.size() == 1) return read_nifti(inputs[0]);
  std::vector<Image> volumes;
  for (const std::string& f : inputs) {
    volumes.push_back(read_nifti(f));
    if (volumes.back().nt() != 1) throw std::invalid_argument(fmt::format("{}: with several -i, each must be 3D", f));
    require_same_grid(volumes.front().header(), inputs.front(), volumes.back().header(), f);
  }
  ImageHeader h = volumes.front().header();
  h.num_volumes = static_cast<int64_t>(volumes.size());
  std::vector<float> data;
  for (const Image& v : volumes) data.insert(data.end(), v.data().begin(), v.data().end());
  return {h, std::move(data)};
}

// Voxels of the analysis: the mask's non-zero voxels, or without one, the voxels not zero in every subject.
std::vector<int64_t> analysis_voxels(const Image& data, const std::string& mask_path) {
  const int64_t nvox = data.header().voxels_per_volume();
  std::vector<int64_t> voxels;
  if (!mask_path.empty()) {
    const Image mask = read_nifti(mask_path);
    require_same_grid(data.header(), "the input", mask.header(), mask_path);
    const auto m = mask.volume(0);
    for (int64_t v = 0; v < nvox; ++v) {
      if (m[static_cast<size_t>(v)] != 0.0f && std::isfinite(m[static_cast<size_t>(v)])) voxels.push_back(v);
    }
    if (voxels.empty()) throw std::invalid_argument(fmt::format("{}: the mask is empty", mask_path));
  } else {
    for (int64_t v = 0; v < nvox; ++v) {
      bool any = false;
      for (int64_t s = 0; s < data.nt() && !any; ++s) any = data.volume(s)[static_cast<size_t>(v)] != 0.0f;
      if (any) voxels.push_back(v);
    }
    if (voxels.empty()) throw std::invalid_argument("the input is zero everywhere: nothing to test");
  }
  return voxels;
}

// The design and its t contrasts with their names: the group mean for -1, else design.mat and design.con.
void read_design(const RandomiseOptions& o, const std::string& design_file, const std::string& contrasts_file,
                 RandomiseInputs& in, std::vector<Eigen::RowVectorXd>& contrasts) {
  if (o.one_sample) {
    in.design = Eigen::MatrixXd::Ones(in.subjects, 1);
    contrasts.push_back(Eigen::RowVectorXd::Ones(1));
    in.names.emplace_back("group mean");
    return;
  }
  in.design = read_vest(design_file).values;
  if (in.design.rows() != in.subjects) {
    throw std::invalid_argument(
        fmt::format("{}: {} rows, but the input has {} subjects (volumes)", o.design, in.design.rows(), in.subjects));
  }
  const VestMatrix con = read_vest(contrasts_file);
  for (Eigen::Index k = 0; k < con.values.rows(); ++k) {
    if (con.values.cols() != in.design.cols()) {
      throw std::invalid_argument(fmt::format("{}: contrasts have {} weights but {} has {} columns", o.contrasts,
                                              con.values.cols(), o.design, in.design.cols()));
    }
    contrasts.emplace_back(con.values.row(k));
    in.names.push_back(static_cast<size_t>(k) < con.names.size() ? con.names[static_cast<size_t>(k)]
                                                                 : fmt::format("contrast {}", k + 1));
  }
}

// The analysed voxels' values, [subject][voxel]; throws for a value that is not finite.
std::vector<float> masked_values(const Image& data, const std::vector<int64_t>& voxels) {
  const auto n = static_cast<int>(data.nt());
  const size_t nv = voxels.size();
  std::vector<float> values(static_cast<size_t>(n) * nv);
  for (int s = 0; s < n; ++s) {
    const auto vol = data.volume(s);
    for (size_t i = 0; i < nv; ++i) {
      const float x = vol[static_cast<size_t>(voxels[i])];
      if (!std::isfinite(x)) {
        const int64_t v = voxels[i], nx = data.header().dims[0], ny = data.header().dims[1];
        throw std::invalid_argument(
            fmt::format("subject {} (volume {}) is not finite at voxel ({}, {}, {}) inside the mask", s + 1, s, v % nx,
                        (v / nx) % ny, v / (nx * ny)));
      }
      values[static_cast<size_t>(s) * nv + i] = x;
    }
  }
  return values;
}

// -D: the data per voxel and the design's columns to mean zero.
void demean(RandomiseInputs& in) {
  const size_t nv = in.voxels.size();
  const int n = in.subjects;
  for (size_t i = 0; i < nv; ++i) {
    double mean = 0.0;
    for (int s = 0; s < n; ++s) mean += in.values[static_cast<size_t>(s) * nv + i];
    mean /= n;
    for (int s = 0; s < n; ++s) in.values[static_cast<size_t>(s) * nv + i] -= static_cast<float>(mean);
  }
  for (Eigen::Index c = 0; c < in.design.cols(); ++c) {
    const double mean = in.design.col(c).mean();
    if (std::abs(mean) > 1e-9 * std::max(1.0, in.design.col(c).cwiseAbs().maxCoeff())) {
      spdlog::warn("-D: design column {} had mean {:.4g}; demeaned", c + 1, mean);
    }
    in.design.col(c).array() -= mean;
  }
}

// design.fts: one row per F test, a 0/1 per t contrast; each F test's model after the t contrasts'.
void add_f_tests(const RandomiseOptions& o, const std::string& f_contrasts_file,
                 const std::vector<Eigen::RowVectorXd>& contrasts, RandomiseInputs& in) {
  const Eigen::MatrixXd fts = read_vest(f_contrasts_file).values;
  if (fts.cols() != static_cast<Eigen::Index>(contrasts.size())) {
    throw std::invalid_argument(fmt::format("{}: {} columns, but {} has {} t contrasts", o.f_contrasts, fts.cols(),
                                            o.contrasts, contrasts.size()));
  }
  for (Eigen::Index f = 0; f < fts.rows(); ++f) {
    std::vector<Eigen::RowVectorXd> picked;
    std::string which;
    for (Eigen::Index k = 0; k < fts.cols(); ++k) {
      if (fts(f, k) != 0.0 && fts(f, k) != 1.0) {
        throw std::invalid_argument(
            fmt::format("{}: F test {} has {} (only 0 and 1 select t contrasts)", o.f_contrasts, f + 1, fts(f, k)));
      }
      if (fts(f, k) == 1.0) {
        picked.push_back(contrasts[static_cast<size_t>(k)]);
        which += fmt::format("{}{}", which.empty() ? "" : ", ", k + 1);
      }
    }
    if (picked.empty())
      throw std::invalid_argument(fmt::format("{}: F test {} selects no contrast", o.f_contrasts, f + 1));
    Eigen::MatrixXd rows(static_cast<Eigen::Index>(picked.size()), in.design.cols());
    for (size_t i = 0; i < picked.size(); ++i) rows.row(static_cast<Eigen::Index>(i)) = picked[i];
    in.models.push_back(make_f_contrast_model(in.design, rows, fmt::format("{} (F test {})", o.f_contrasts, f + 1)));
    in.suffixes.push_back(fmt::format("fstat{}", f + 1));
    in.names.push_back(fmt::format("F of contrasts {}", which));
  }
}

}  // namespace

void check_randomise_options(const RandomiseOptions& o) {
  for (const auto& [flag, value] : {std::pair{"-c", o.cluster_extent}, std::pair{"-C", o.cluster_mass}}) {
    if (!std::isnan(value) && !(value > 0.0 && std::isfinite(value))) {
      throw std::invalid_argument(fmt::format("{} {}: a cluster-forming threshold must be a positive t", flag, value));
    }
  }
  if (!o.f_contrasts.empty() && o.one_sample) throw std::invalid_argument("-f needs -d and -t, not -1");
  if (o.one_sample && (!o.design.empty() || !o.contrasts.empty())) {
    throw std::invalid_argument("-1 tests the group mean by sign flipping: give either -1 or -d and -t, not both");
  }
  if (!o.one_sample && (o.design.empty() || o.contrasts.empty())) {
    throw std::invalid_argument("give -d design.mat and -t design.con, or -1 for a one-sample test");
  }
  if (o.one_sample && !o.groups.empty()) {
    throw std::invalid_argument("exchangeability blocks (-e) with sign flipping (-1) are not supported");
  }
}

RandomiseInputs read_randomise_inputs(const RandomiseOptions& o, const ScaleOut& scale) {
  std::vector<std::string> inputs;
  for (const std::string& f : o.inputs) inputs.push_back(scale.input(f));
  const std::string design_file = scale.input(o.design), contrasts_file = scale.input(o.contrasts);
  const std::string f_contrasts_file = scale.input(o.f_contrasts), groups_file = scale.input(o.groups);
  const std::string mask_file = scale.input(o.mask);
  const Image data = read_subjects(inputs);
  RandomiseInputs in;
  in.grid = data.header();
  in.subjects = static_cast<int>(data.nt());
  std::vector<Eigen::RowVectorXd> contrasts;
  read_design(o, design_file, contrasts_file, in, contrasts);
  if (!o.groups.empty()) {
    in.blocks = read_vest_groups(groups_file);
    if (static_cast<int>(in.blocks.size()) != in.subjects) {
      throw std::invalid_argument(
          fmt::format("{}: {} rows, but the input has {} subjects", o.groups, in.blocks.size(), in.subjects));
    }
  }
  in.voxels = analysis_voxels(data, mask_file);
  in.values = masked_values(data, in.voxels);
  if (o.demean) demean(in);
  for (size_t k = 0; k < contrasts.size(); ++k) {
    in.models.push_back(make_t_contrast_model(in.design, contrasts[k], o.one_sample ? "-1" : o.design));
    in.suffixes.push_back(fmt::format("tstat{}", k + 1));
  }
  if (!o.f_contrasts.empty()) add_f_tests(o, f_contrasts_file, contrasts, in);
  return in;
}

}  // namespace rtf
