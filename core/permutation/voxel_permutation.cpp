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

// The device state of one test: kernels and buffers for a launch of up to `block` rearrangements. Real: the kernel's
// `real` (double where the device has cl_khr_fp64, else float).
class VoxelPermutationBlocks::Impl {
 public:
  virtual ~Impl() = default;
  virtual std::vector<double> observe() = 0;
  virtual void set_observed(const std::vector<double>& t) = 0;
  virtual VoxelPermutationBlock run(int first, int count, const PermutationMaps& maps,
                                    const PermutationProgress& progress) = 0;
  virtual int launch_block() const = 0;
};

namespace {

template <typename Real>
class BlocksOf final : public VoxelPermutationBlocks::Impl {
 public:
  BlocksOf(Device& device, const TContrastModel& model, const PermutationSet& set, const std::vector<float>& residuals,
           size_t voxels, int max_block)
      : device_(device), model_(model), set_(set), voxels_(voxels) {
    const int n = model.n, rows = model.p;
    const size_t per_rearrangement = static_cast<size_t>(rows) * static_cast<size_t>(n) * sizeof(Real);
    const bool constant = per_rearrangement * kChunk <= kConstantBytes;
    block_ = constant ? static_cast<int>(std::min<size_t>(static_cast<size_t>(max_block),
                                                          kConstantBytes / per_rearrangement / kChunk * kChunk))
                      : max_block;
    std::vector<std::string> defines{
        fmt::format("N={}", n),          fmt::format("R={}", rows),
        fmt::format("B={}", block_),     fmt::format("WG={}", kWorkGroup),
        fmt::format("CHUNK={}", kChunk), constant ? "WSPACE=__constant" : "WSPACE=__global"};
    if (model.is_f()) defines.emplace_back("STAT_F");
    kernel_ = device.kernel("permutation_t.cl", "permutation_t", defines);
    reduce_ = device.kernel("permutation_t.cl", "max_over_groups",
                            {fmt::format("N={}", n), fmt::format("R={}", rows), fmt::format("B={}", block_),
                             fmt::format("WG={}", kWorkGroup), fmt::format("CHUNK={}", kChunk)});
    const cl_command_queue q = device.queue();
    groups_ = (voxels + kWorkGroup - 1) / kWorkGroup;
    resid_ = DeviceBuffer<float>(device, residuals.size(), CL_MEM_READ_ONLY);
    resid_.write(q, residuals);
    std::vector<Real> sumsq(voxels, Real{0});
    for (int j = 0; j < n; ++j) {
      const float* row = &residuals[static_cast<size_t>(j) * voxels];
      for (size_t v = 0; v < voxels; ++v) sumsq[v] += static_cast<Real>(row[v]) * static_cast<Real>(row[v]);
    }
    sumsq_ = DeviceBuffer<Real>(device, voxels, CL_MEM_READ_ONLY);
    sumsq_.write(q, sumsq);
    const size_t launch_weights = static_cast<size_t>(block_) * static_cast<size_t>(rows) * static_cast<size_t>(n);
    weights_ = DeviceBuffer<Real>(device, launch_weights, CL_MEM_READ_ONLY);
    w_.resize(launch_weights);
    tobs_ = DeviceBuffer<Real>(device, voxels);
    exceed_ = DeviceBuffer<uint32_t>(device, voxels);
    partial_ = DeviceBuffer<float>(device, groups_ * static_cast<size_t>(block_));
    std::vector<Real> alpha_values;  // t: alpha (a = U alpha); F: G, row-major
    if (model.is_f()) {
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < rows; ++c) alpha_values.push_back(static_cast<Real>(model.quadratic(r, c)));
      }
    } else {
      const Eigen::VectorXd alpha_d = model.basis.transpose() * model.a;
      for (Eigen::Index r = 0; r < alpha_d.size(); ++r) alpha_values.push_back(static_cast<Real>(alpha_d[r]));
    }
    alpha_ = DeviceBuffer<Real>(device, alpha_values.size(), CL_MEM_READ_ONLY);
    alpha_.write(q, alpha_values);
    scale_ = static_cast<Real>(model.is_f() ? 1.0 : model.variance_factor / model.dof);
  }

  std::vector<double> observe() override {
    // The identity alone (mode 0) writes tobs.
    fill_weights(0, 1);
    set_args(kernel_, resid_, sumsq_, weights_, alpha_, 1, static_cast<int>(voxels_), scale_, tobs_, exceed_, partial_,
             0, no_maps(), 0);
    launch<1>(device_.queue(), kernel_, {global()}, {kWorkGroup});
    observed_ = true;
    const std::vector<Real> t = tobs_.read_all(device_.queue());
    return {t.begin(), t.end()};
  }

  void set_observed(const std::vector<double>& t) override {
    if (t.size() != voxels_) {
      throw std::invalid_argument(fmt::format("permutation test: {} observed values for {} voxels", t.size(), voxels_));
    }
    const std::vector<Real> values(t.begin(), t.end());
    tobs_.write(device_.queue(), values);
    observed_ = true;
  }

  VoxelPermutationBlock run(int first, int count, const PermutationMaps& consume_maps,
                            const PermutationProgress& progress) override {
    if (first < 0 || count < 1 || first > set_.count - count) {
      throw std::invalid_argument(fmt::format("permutation test: rearrangements {} .. {} of a set of {}", first,
                                              static_cast<int64_t>(first) + count - 1, set_.count));
    }
    if (!observed_) throw std::logic_error("permutation test: a block before the observed statistic");
    const cl_command_queue q = device_.queue();
    if (maxima_.size() < static_cast<size_t>(count)) maxima_ = DeviceBuffer<float>(device_, static_cast<size_t>(count));
    if (consume_maps && maps_.size() < static_cast<size_t>(block_) * voxels_) {
      maps_ = DeviceBuffer<float>(device_, static_cast<size_t>(block_) * voxels_);
    }
    exceed_.fill(q, 0U);
    const int write_maps = consume_maps ? 1 : 0;
    const DeviceBuffer<float>& maps = consume_maps ? maps_ : no_maps();
    const int vox = static_cast<int>(voxels_), g = static_cast<int>(groups_);
    for (int done = 0; done < count; done += block_) {
      const int n = std::min(block_, count - done);
      fill_weights(first + done, n);
      set_args(kernel_, resid_, sumsq_, weights_, alpha_, n, vox, scale_, tobs_, exceed_, partial_, 1, maps,
               write_maps);
      launch<1>(q, kernel_, {global()}, {kWorkGroup});
      set_args(reduce_, partial_, g, n, maxima_, done);
      launch<1>(q, reduce_, {static_cast<size_t>((n + 31) / 32 * 32)}, {32});
      if (consume_maps) consume_maps(maps_, first + done, n);
      if (progress) {
        RTF_CL_CHECK(clFinish(q));
        progress(done + n, count);
      }
    }
    VoxelPermutationBlock block;
    block.first = first;
    block.exceed = exceed_.read_all(q);
    block.max_null.resize(static_cast<size_t>(count));
    maxima_.read(q, std::span<float>(block.max_null));
    return block;
  }

  int launch_block() const override { return block_; }

 private:
  size_t global() const { return groups_ * kWorkGroup; }
  // The kernel's maps argument when no maps are written (a buffer of one).
  const DeviceBuffer<float>& no_maps() {
    if (dummy_maps_.size() == 0) dummy_maps_ = DeviceBuffer<float>(device_, 1);
    return dummy_maps_;
  }
  void fill_weights(int first, int count) {
    const int rows = model_.p, n = model_.n;
    for (int b = 0; b < count; ++b) {
      for (int r = 0; r < rows; ++r) {
        rearranged_weights(set_, first + b, model_.basis.col(r),
                           &w_[(static_cast<size_t>(b) * static_cast<size_t>(rows) + static_cast<size_t>(r)) *
                               static_cast<size_t>(n)]);
      }
    }
    weights_.write(device_.queue(),
                   std::span<const Real>(
                       w_.data(), static_cast<size_t>(count) * static_cast<size_t>(rows) * static_cast<size_t>(n)));
  }

  Device& device_;
  const TContrastModel& model_;
  const PermutationSet& set_;
  size_t voxels_ = 0, groups_ = 0;
  int block_ = 0;
  bool observed_ = false;
  Real scale_{};
  ClKernel kernel_, reduce_;
  DeviceBuffer<float> resid_, partial_, maxima_, maps_, dummy_maps_;
  DeviceBuffer<Real> sumsq_, weights_, alpha_, tobs_;
  DeviceBuffer<uint32_t> exceed_;
  std::vector<Real> w_;
};

}  // namespace

VoxelPermutationBlocks::VoxelPermutationBlocks(Device& device, const TContrastModel& model, const PermutationSet& set,
                                               const std::vector<float>& residuals, size_t voxels, int max_block)
    : voxels_(voxels) {
  if (max_block < kChunk || max_block % kChunk != 0) {
    throw std::invalid_argument(fmt::format("permutation test: block {} is not a multiple of {}", max_block, kChunk));
  }
  if (set.n != model.n || residuals.size() != static_cast<size_t>(model.n) * voxels || voxels == 0 || set.count < 1) {
    throw std::invalid_argument(
        fmt::format("permutation test: {} subjects in the model, {} in the set, {} values for {} voxels", model.n,
                    set.n, residuals.size(), voxels));
  }
  if (device.has_fp64()) {
    impl_ = std::make_unique<BlocksOf<double>>(device, model, set, residuals, voxels, max_block);
  } else {
    impl_ = std::make_unique<BlocksOf<float>>(device, model, set, residuals, voxels, max_block);
  }
}

VoxelPermutationBlocks::~VoxelPermutationBlocks() = default;

std::vector<double> VoxelPermutationBlocks::observe() {
  return impl_->observe();
}

void VoxelPermutationBlocks::set_observed(const std::vector<double>& t) {
  impl_->set_observed(t);
}

VoxelPermutationBlock VoxelPermutationBlocks::run(int first, int count, const PermutationMaps& maps,
                                                  const PermutationProgress& progress) {
  return impl_->run(first, count, maps, progress);
}

int VoxelPermutationBlocks::launch_block() const {
  return impl_->launch_block();
}

VoxelPermutationResult voxel_permutation_test(Device& device, const TContrastModel& model, const PermutationSet& set,
                                              const std::vector<float>& residuals, size_t voxels,
                                              const PermutationProgress& progress, const PermutationMaps& maps,
                                              int max_block) {
  VoxelPermutationBlocks blocks(device, model, set, residuals, voxels, max_block);
  const std::vector<double> observed = blocks.observe();
  VoxelPermutationBlock all = blocks.run(0, set.count, maps, progress);
  VoxelPermutationResult result;
  result.t.assign(observed.begin(), observed.end());
  result.exceed = std::move(all.exceed);
  result.max_null = std::move(all.max_null);
  return result;
}

}  // namespace rtf
