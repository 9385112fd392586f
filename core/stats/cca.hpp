// SlidingCca: sliding-window canonical correlation analysis on the device (Friman et al. 2003; Eklund et al. 2012).
// Per voxel, the spatial basis filter responses of the window's volumes (an isotropic Gaussian and oriented filters)
// are correlated with a temporal basis (sine/cosine at the stimulus period, or given regressors); the map holds the
// largest correlation between a non-negative combination of the filter responses and any combination of the
// temporal basis (restricted CCA). Each volume is filtered once (responses cached by volume index); each call then
// recomputes the window's covariances and solves the small CCA per voxel. docs/algorithms/cca.md.
// Kernels: kernels/cca.cl. Reference: core/reference/cca_reference.hpp.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/device/kernel_profile.hpp"
#include "core/image/image.hpp"
#include "core/ring/device_ring_buffer.hpp"

namespace rtf {

// The spatial basis (shapes in docs/algorithms/cca.md): kPlanar = a 2D set in each slice as in Friman et al. 2003 and
// Eklund et al. 2012 (isotropic + 3 filters oriented at 0, 60, 120 degrees in the x-y plane); kVolumetric = the 3D
// extension (isotropic + 6 filters along the icosahedron's six axes).
enum class CcaFilters { kPlanar, kVolumetric };

struct CcaSpec {
  CcaFilters filters = CcaFilters::kPlanar;
  double fwhm_mm = 6.0;          // FWHM of the Gaussian g that every basis filter is built on (mm, isotropic)
  double truncate_sigmas = 4.0;  // filter half-width per axis: ceil(truncate * sigma / voxel size) voxels
  // false: the map is the canonical correlation in [0, 1]. true: times the sign of the first temporal basis column's
  // weight (with the spatial weights non-negative), e.g. positive where the response follows a task regressor.
  bool signed_map = false;
  // Voxels per work-item of the per-voxel solve: 0 = automatic (1 on GPUs; the native float vector width, 4 to 16, as
  // floatN arithmetic on CPU devices), else 1, 2, 4, 8 or 16 (tests run every form on any device).
  int vector_width = 0;
};

// The temporal basis of a run: row i is the basis at volume index i.
class CcaTemporalBasis {
 public:
  static constexpr int kMaxColumns = 4;
  // sin and cos of 2 pi k t / period for k = 1..harmonics, t = index * tr_s (2 * harmonics columns, any run length).
  static CcaTemporalBasis sine_cosine(double period_s, double tr_s, int harmonics = 1);
  // Given regressors (rows = the run's volumes, 1..4 columns), e.g. a task regressor and its temporal derivative.
  static CcaTemporalBasis regressors(Eigen::MatrixXd columns);

  int columns() const { return columns_; }
  bool has_row(int64_t index) const { return index >= 0 && (!is_table_ || index < table_.rows()); }
  // Row `index` into out[0..columns). Throws std::out_of_range past the given regressors.
  void row(int64_t index, std::span<double> out) const;

 private:
  CcaTemporalBasis() = default;
  int columns_ = 0;
  bool is_table_ = false;
  Eigen::MatrixXd table_;
  double period_s_ = 0.0, tr_s_ = 0.0;
};

// The separable form of the spatial basis filters (host values uploaded to the device). Every filter is
// f_k(r) = c_k sum_m coef[k][m] G_m(r) with moment kernels G_m = g(r) r_a r_b / sigma^2 built from 1D taps
// k_p(i) = exp(-u^2 / (2 sigma^2)) (u / sigma)^p, u = i * voxel_mm[axis], i = -R..R; g(r) = prod_axes k_0.
struct CcaFilterBank {
  std::array<int, 3> radius{};                             // R per axis (0 along z for kPlanar)
  std::array<std::array<std::vector<double>, 3>, 3> taps;  // taps[axis][p][i + R]
  std::vector<std::array<double, 7>> coef;                 // per filter, weights of g, xx, yy, zz, xy, xz, yz
  std::vector<std::array<double, 3>> directions;  // unit axis of each oriented filter (filter k + 1), in mm space
};

CcaFilterBank make_cca_filter_bank(std::array<double, 3> voxel_mm, const CcaSpec& spec);

class SlidingCca {
 public:
  // `grid` fixes dims and voxel size; `window` is the most volumes one call uses (and the response cache's size).
  // Throws std::invalid_argument for a bad grid or spec, more than 4 basis columns, or a window too short for
  // filters + columns + 1 volumes.
  SlidingCca(Device& device, const ImageHeader& grid, int64_t window, CcaTemporalBasis basis, CcaSpec spec = {});
  SlidingCca(const SlidingCca&) = delete;
  SlidingCca& operator=(const SlidingCca&) = delete;

  // Computes the map of the volumes given: volume volume_indices[j] is at element slots[j] * voxels of `volumes`
  // (a ring's data, or a contiguous series). A volume index is filtered the first time it is seen and its
  // responses are reused while it stays cached (the index identifies the data: reset() after changing it).
  // Between filters + columns + 1 and window() volumes; indices and slots distinct; indices within window() of
  // each other. `wait` holds events the reading of `volumes` must wait for (e.g. the ring's upload). Enqueued on the
  // compute queue; returns the event of the last kernel. Throws std::invalid_argument for bad input, including a
  // temporal basis with no variance or linearly dependent columns over the window.
  ClEvent enqueue(const DeviceBuffer<float>& volumes, std::span<const int64_t> slots,
                  std::span<const int64_t> volume_indices, DeviceBuffer<float>& out_map,
                  const std::vector<cl_event>& wait = {});
  // The last min(window(), newest + 1) volumes held by the ring. Throws if the window is longer than the ring.
  ClEvent enqueue(const DeviceRingBuffer& ring, DeviceBuffer<float>& out_map, const std::vector<cl_event>& wait = {});

  // Offline, the same kernels over a series (grid as constructed): the map of all its volumes as one window (needs
  // nt <= window()), or one map per volume t over volumes [t - window() + 1, t] (NaN while fewer than
  // minimum_volumes() exist). Both reset() the cache first.
  std::vector<float> compute(const Image& series);
  Image compute_sliding(const Image& series);

  void reset();  // forgets every cached filter response
  // Blocking read of a cached volume's responses, [filter][voxel] (tests). They are the responses of the volume minus
  // the baseline: the first volume filtered since reset() (a per-voxel constant to CCA that keeps float sums small).
  // Throws if the index is not cached.
  std::vector<float> read_responses(int64_t volume_index) const;

  int spatial_filters() const { return filters_; }
  int temporal_columns() const { return columns_; }
  int64_t window() const { return window_; }
  int vector_width() const { return vec_; }  // voxels per work-item of the solve
  int64_t minimum_volumes() const { return filters_ + columns_ + 1; }
  const CcaFilterBank& filter_bank() const { return bank_; }
  const CcaSpec& spec() const { return spec_; }

  // Attaches a per-stage device-time breakdown ("cca filter", "cca solve"); null detaches. The caller collects it.
  void set_profile(KernelProfile* profile) { profile_ = profile; }

 private:
  void validate(const DeviceBuffer<float>& volumes, std::span<const int64_t> slots,
                std::span<const int64_t> volume_indices, const DeviceBuffer<float>& out_map) const;
  void prepare_temporal(std::span<const int64_t> volume_indices, int stage);
  ClEvent filter_volume(const DeviceBuffer<float>& volumes, int64_t slot, int64_t cache_slot,
                        const std::vector<cl_event>& wait);

  Device& device_;
  std::array<int64_t, 3> dims_;
  int64_t voxels_;
  int64_t window_;
  CcaTemporalBasis basis_;
  CcaSpec spec_;
  CcaFilterBank bank_;
  int filters_;
  int columns_;
  int vec_;        // voxels per work-item of the solve (1 on GPUs, a vector width on CPU devices)
  size_t padded_;  // voxels rounded up to vec_: the per-filter stride of responses_
  ClKernel baseline_kernel_, moments_x_, moments_y_, moments_z_, solve_;
  std::array<DeviceBuffer<float>, 3> taps_;
  DeviceBuffer<float> coef_;
  DeviceBuffer<float> baseline_;  // subtracted from every volume before filtering (set by the first after reset)
  bool has_baseline_ = false;
  DeviceBuffer<float> xmom_, xymom_;
  DeviceBuffer<float> responses_;      // [cache slot][filter][voxel]
  std::vector<int64_t> cached_index_;  // volume index held by each cache slot (-1: none)
  // The window's table (cache slots; whitened temporal rows + row 0 of Lx^-T), double-buffered: host staging stays
  // untouched until its non-blocking upload has completed.
  std::array<DeviceBuffer<cl_int>, 2> window_slot_;
  std::array<DeviceBuffer<float>, 2> window_z_;
  std::array<std::vector<cl_int>, 2> slot_stage_;
  std::array<std::vector<float>, 2> z_stage_;
  std::array<ClEvent, 2> stage_done_;
  int next_stage_ = 0;
  Eigen::MatrixXd x_;  // the window's temporal basis rows (allocated once)
  std::vector<double> row_;
  std::vector<int64_t> ring_slots_, ring_indices_;  // the ring overload's window (allocated once)
  KernelProfile* profile_ = nullptr;
};

}  // namespace rtf
