// Resampling an image (3D or 4D) onto a reference grid through a chain of spatial transforms (affines and displacement
// fields), on the device (kernels/resample.cl, docs/algorithms/registration.md). The chain maps points, not images: a
// reference voxel's world position goes through chain[0] first, then chain[1], ..., and the input is sampled where it
// ends (the order of antsApplyTransforms' -t list read from first to last as applied to points). Every transform maps
// world (RAS mm) to world.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "core/registration/displacement_field.hpp"

namespace rtf {

// nearest: the nearest voxel's value (labels stay labels, never blended); linear: trilinear; cubic: Keys cubic
// convolution (a = -0.5). Conventions at the edges: kernels/sampling.clh.
enum class ResampleInterpolation { kNearest, kLinear, kCubic };

std::optional<ResampleInterpolation> parse_resample_interpolation(std::string_view name);  // nearest|linear|cubic
const char* to_string(ResampleInterpolation interpolation);

// The voxel -> world affine's inverse, or std::invalid_argument naming `what` when it is not invertible (or not
// finite).
Eigen::Matrix4d inverse_affine(const Eigen::Matrix4d& affine, std::string_view what);

// `input` resampled onto `reference`'s grid (its dims and affine; the output keeps `input`'s volumes and TR), sampled
// at chain[n-1](...chain[0](A_ref v)...). Points outside the input get `outside`. Throws std::invalid_argument for a
// non-invertible affine in the chain or either image, or a field that is not three volumes.
// `progress(done, total)` (optional) is called after each volume.
Image resample(Device& device, const Image& input, const ImageHeader& reference,
               const std::vector<SpatialTransform>& chain, ResampleInterpolation interpolation, float outside = 0.0f,
               const std::function<void(int64_t done, int64_t total)>& progress = {});

// Device-resident resampling through one affine, for images already on the device: `volumes` volumes of `in` (x
// fastest, `in_dims`, back to back) sampled at M v for each voxel v of the `out_dims` grid (M: output voxel -> input
// voxel, e.g. A_in^-1 T A_out) into `out` (volumes back to back); points outside the input get `outside`. Enqueued on
// the compute queue. Throws std::invalid_argument when a buffer is too small or M is not invertible.
void resample_on_device(Device& device, const DeviceBuffer<float>& in, const std::array<int64_t, 3>& in_dims,
                        DeviceBuffer<float>& out, const std::array<int64_t, 3>& out_dims,
                        const Eigen::Matrix4d& out_voxel_to_in_voxel, int64_t volumes,
                        ResampleInterpolation interpolation, float outside = 0.0f);

}  // namespace rtf
