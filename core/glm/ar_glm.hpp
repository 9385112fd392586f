// The AR(P) first-level GLM on the device (kernels/ar_glm.cl, docs/algorithms/glm_ar.md): Cochrane-Orcutt iterations
// as statsmodels' GLSAR, with the AR coefficient maps smoothed between iterations by normalised convolution inside the
// mask (BROCCOLI). Fits a batch of data sets at once (the permutation test's surrogates, or one observed series);
// statistics stay on the device for the maximum and cluster statistics of the permutation test.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/design/design_matrix.hpp"
#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/filters/gaussian_smoothing.hpp"
#include "core/glm/ar_model.hpp"
#include "core/image/image.hpp"

namespace rtf {

struct ArGlmOptions {
  int order = 4;            // P
  int iterations = 3;       // Cochrane-Orcutt fits (M >= 1; 1: OLS on the volumes after the first P)
  double ar_fwhm_mm = 6.0;  // smoothing of the AR maps between iterations; 0: none
};

class ArGlm {
 public:
  // `mask`: nonzero = inside, over the full grid (x fastest). `max_batch`: data sets per fit. Throws
  // std::invalid_argument for an empty mask, a mask of the wrong size, iterations < 1 or an order unlike the model's.
  ArGlm(Device& device, std::array<int64_t, 3> dims, std::array<double, 3> voxel_mm, std::vector<uint8_t> mask,
        ArGlmModel model, ArGlmOptions options, int max_batch);

  // Fits `count` (<= max_batch) data sets of `series` (float [count][n][voxels of the grid], on the device). With
  // `details`, also keeps sigma2, gamma and the last AR maps (read them with read_fit; count must be 1).
  void fit(const DeviceBuffer<float>& series, int count, bool details = false);

  // Statistic s of data set b (mask order) starts at (s * max_batch + b) * mask_voxels().
  const DeviceBuffer<float>& statistics() const { return stat_; }
  // Per statistic s and data set b < count, the largest finite value over the mask (-inf for none): [s][b].
  std::vector<float> maxima(int count);

  struct Fit {
    Eigen::MatrixXd beta;                        // columns x mask voxels (NaN where singular)
    std::vector<float> sigma2;                   // mask voxels
    std::vector<std::vector<float>> rho;         // P maps over the full grid (those used in the last fit)
    std::vector<std::vector<float>> statistics;  // per contrast, mask voxels
  };
  Fit read_fit();  // after fit(..., 1, true)

  const ArGlmModel& model() const { return model_; }
  const std::vector<int32_t>& mask_voxels_index() const { return voxel_index_; }
  size_t mask_voxels() const { return voxel_index_.size(); }
  int max_batch() const { return max_batch_; }

 private:
  Device& device_;
  std::array<int64_t, 3> dims_;
  size_t volume_ = 0;  // voxels of the grid
  ArGlmModel model_;
  ArGlmOptions options_;
  int max_batch_;
  std::vector<int32_t> voxel_index_;
  std::unique_ptr<GaussianSmoother> ar_smoother_;  // over max_batch * P maps, masked
  ClKernel estimate_, final_, map_max_;
  DeviceBuffer<int32_t> voxel_;
  DeviceBuffer<double> basis64_, rows64_;  // U and the rows in the kernel's `real`: double with cl_khr_fp64,
  DeviceBuffer<float> basis32_, rows32_;   // else float
  cl_mem basis_mem_ = nullptr, rows_mem_ = nullptr;
  DeviceBuffer<int32_t> shape_;
  DeviceBuffer<float> rho_a_, rho_b_;   // [max_batch][P][grid]
  DeviceBuffer<float> stat_;            // [NS][max_batch][VM]
  DeviceBuffer<float> sigma2_, gamma_;  // [1][VM], [1][R][VM]
  DeviceBuffer<float> maxima_;          // [NS][max_batch]
  const DeviceBuffer<float>* last_rho_ = nullptr;
  bool last_first_ = true;
};

// The maps of one AR(P) GLM on the series' grid.
struct ArGlmImages {
  Image beta, sigma2, rho;        // rho: P volumes
  std::vector<Image> statistics;  // per contrast (t or F), NaN outside the mask
  ArGlmModel model;
};

// The whole AR(P) GLM of a 4D series (host convenience for `rtfmri glm --noise arP`): uploads `bold`, smooths it
// first when `fwhm_mm` > 0 (normalised convolution inside the mask, as every surrogate of the permutation test), fits.
ArGlmImages fit_ar_glm_series(Device& device, const Image& bold, const Eigen::MatrixXd& design,
                              const std::vector<GlmContrast>& contrasts, const std::vector<uint8_t>& mask,
                              const ArGlmOptions& options, double fwhm_mm = 0.0);

}  // namespace rtf
