// Host side of the voxel-wise permutation test (voxel_permutation.hpp): residual forming, launches of a block of
// rearrangements at a time (their vectors in constant memory), and the per-rearrangement maxima.
#include "core/permutation/voxel_permutation.hpp"

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"

namespace rtf {

namespace {

constexpr int kChunk = 32;
constexpr int kWorkGroup = 128;
constexpr size_t kConstantBytes = 60 * 1024;  // under the 64 KiB every OpenCL device offers

}  // namespace

std::vector<double> VoxelPermutationResult::uncorrected_p() const {
  std::vector<double> p(t.size());
  for (size_t v = 0; v < t.size(); ++v) p[v] = static_cast<double>(exceed[v]) / static_cast<double>(max_null.size());
  return p;
}

std::vector<double> VoxelPermutationResult::corrected_p() const {
  std::vector<float> sorted = max_null;
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> p(t.size());
  for (size_t v = 0; v < t.size(); ++v) {
    const float bound = t[v] - 1e-5f * std::abs(t[v]);  // the same relative slack as the counts
    const auto at_or_above = sorted.end() - std::lower_bound(sorted.begin(), sorted.end(), bound);
    p[v] = static_cast<double>(at_or_above) / static_cast<double>(sorted.size());
  }
  return p;
}

void remove_nuisance(const TContrastModel& model, std::vector<float>& data, size_t voxels) {
  if (model.nuisance_rank == 0) return;
  const auto n = static_cast<Eigen::Index>(model.n);
  if (data.size() != static_cast<size_t>(n) * voxels) throw std::invalid_argument("remove_nuisance: size mismatch");
  Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> y(
      data.data(), n, static_cast<Eigen::Index>(voxels));
  const Eigen::MatrixXf forming = model.residual_forming.cast<float>();
  const Eigen::MatrixXf e = forming * y;
  y = e;
}

namespace {

// Real: the kernel's `real` (double where the device has cl_khr_fp64, else float).
template <typename Real>
VoxelPermutationResult run_test(Device& device, const TContrastModel& model, const PermutationSet& set,
                                const std::vector<float>& residuals, size_t voxels, const PermutationProgress& progress,
                                const PermutationMaps& consume_maps, int max_block) {
  const int n = model.n, rows = model.p;
  if (set.n != n || residuals.size() != static_cast<size_t>(n) * voxels || voxels == 0 || set.count < 1) {
    throw std::invalid_argument(
        fmt::format("permutation test: {} subjects in the model, {} in the set, {} values for {} voxels", n, set.n,
                    residuals.size(), voxels));
  }
  const size_t per_rearrangement = static_cast<size_t>(rows) * static_cast<size_t>(n) * sizeof(Real);
  const bool constant = per_rearrangement * kChunk <= kConstantBytes;
  const int block = constant ? static_cast<int>(std::min<size_t>(static_cast<size_t>(max_block),
                                                                 kConstantBytes / per_rearrangement / kChunk * kChunk))
                             : max_block;
  std::vector<std::string> defines{fmt::format("N={}", n),          fmt::format("R={}", rows),
                                   fmt::format("B={}", block),      fmt::format("WG={}", kWorkGroup),
                                   fmt::format("CHUNK={}", kChunk), constant ? "WSPACE=__constant" : "WSPACE=__global"};
  if (model.is_f()) defines.emplace_back("STAT_F");
  ClKernel kernel = device.kernel("permutation_t.cl", "permutation_t", defines);
  ClKernel reduce = device.kernel("permutation_t.cl", "max_over_groups",
                                  {fmt::format("N={}", n), fmt::format("R={}", rows), fmt::format("B={}", block),
                                   fmt::format("WG={}", kWorkGroup), fmt::format("CHUNK={}", kChunk)});
  const cl_command_queue q = device.queue();
  const size_t groups = (voxels + kWorkGroup - 1) / kWorkGroup;
  DeviceBuffer<float> resid(device, residuals.size(), CL_MEM_READ_ONLY);
  resid.write(q, residuals);
  std::vector<Real> sumsq(voxels, Real{0});
  for (int j = 0; j < n; ++j) {
    const float* row = &residuals[static_cast<size_t>(j) * voxels];
    for (size_t v = 0; v < voxels; ++v) sumsq[v] += static_cast<Real>(row[v]) * static_cast<Real>(row[v]);
  }
  DeviceBuffer<Real> sumsq_buf(device, voxels, CL_MEM_READ_ONLY);
  sumsq_buf.write(q, sumsq);
  DeviceBuffer<Real> weights(device, static_cast<size_t>(block) * static_cast<size_t>(rows) * static_cast<size_t>(n),
                             CL_MEM_READ_ONLY);
  DeviceBuffer<Real> tobs(device, voxels);
  DeviceBuffer<uint32_t> exceed(device, voxels);
  exceed.fill(q, 0U);
  DeviceBuffer<float> partial(device, groups * static_cast<size_t>(block));
  DeviceBuffer<float> maxima(device, static_cast<size_t>(set.count));
  const int write_maps = consume_maps ? 1 : 0;
  DeviceBuffer<float> maps(device, consume_maps ? static_cast<size_t>(block) * voxels : 1);

  const Eigen::MatrixXd& vectors = model.basis;  // U; a = U alpha
  std::vector<Real> alpha_values;                // t: alpha (a = U alpha); F: G, row-major
  if (model.is_f()) {
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < rows; ++c) alpha_values.push_back(static_cast<Real>(model.quadratic(r, c)));
    }
  } else {
    const Eigen::VectorXd alpha_d = model.basis.transpose() * model.a;
    for (Eigen::Index r = 0; r < alpha_d.size(); ++r) alpha_values.push_back(static_cast<Real>(alpha_d[r]));
  }
  DeviceBuffer<Real> alpha(device, alpha_values.size(), CL_MEM_READ_ONLY);
  alpha.write(q, alpha_values);
  std::vector<Real> w(static_cast<size_t>(block) * static_cast<size_t>(rows) * static_cast<size_t>(n));
  const auto fill_weights = [&](int first, int count) {
    for (int b = 0; b < count; ++b) {
      for (int r = 0; r < rows; ++r) {
        rearranged_weights(
            set, first + b, vectors.col(r),
            &w[(static_cast<size_t>(b) * static_cast<size_t>(rows) + static_cast<size_t>(r)) * static_cast<size_t>(n)]);
      }
    }
    weights.write(q, std::span<const Real>(
                         w.data(), static_cast<size_t>(count) * static_cast<size_t>(rows) * static_cast<size_t>(n)));
  };
  const int vox = static_cast<int>(voxels);
  const auto scale = static_cast<Real>(model.is_f() ? 1.0 : model.variance_factor / model.dof);
  const size_t global = groups * kWorkGroup;
  // The observed statistic: the identity alone (mode 0).
  fill_weights(0, 1);
  set_args(kernel, resid, sumsq_buf, weights, alpha, 1, vox, scale, tobs, exceed, partial, 0, maps, 0);
  launch<1>(q, kernel, {global}, {kWorkGroup});
  const int g = static_cast<int>(groups);
  for (int first = 0; first < set.count; first += block) {
    const int count = std::min(block, set.count - first);
    fill_weights(first, count);
    set_args(kernel, resid, sumsq_buf, weights, alpha, count, vox, scale, tobs, exceed, partial, 1, maps, write_maps);
    launch<1>(q, kernel, {global}, {kWorkGroup});
    set_args(reduce, partial, g, count, maxima, first);
    launch<1>(q, reduce, {static_cast<size_t>((count + 31) / 32 * 32)}, {32});
    if (consume_maps) consume_maps(maps, first, count);
    if (progress) {
      RTF_CL_CHECK(clFinish(q));
      progress(first + count, set.count);
    }
  }
  VoxelPermutationResult result;
  const std::vector<Real> observed = tobs.read_all(q);
  result.t.assign(observed.begin(), observed.end());
  result.exceed = exceed.read_all(q);
  result.max_null = maxima.read_all(q);
  return result;
}

}  // namespace

VoxelPermutationResult voxel_permutation_test(Device& device, const TContrastModel& model, const PermutationSet& set,
                                              const std::vector<float>& residuals, size_t voxels,
                                              const PermutationProgress& progress, const PermutationMaps& maps,
                                              int max_block) {
  if (max_block < kChunk || max_block % kChunk != 0) {
    throw std::invalid_argument(fmt::format("permutation test: block {} is not a multiple of {}", max_block, kChunk));
  }
  return device.has_fp64() ? run_test<double>(device, model, set, residuals, voxels, progress, maps, max_block)
                           : run_test<float>(device, model, set, residuals, voxels, progress, maps, max_block);
}

}  // namespace rtf
