// Device resampling through a chain of affines: positions once per output grid, then one sampling pass per volume.
#include "core/registration/resample.hpp"

#include <fmt/format.h>

#include <Eigen/LU>
#include <cmath>
#include <stdexcept>
#include <variant>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"

namespace rtf {

namespace {

constexpr const char* kSource = "resample.cl";
constexpr size_t kGroup = 64;

cl_float4 matrix_row(const Eigen::Matrix4d& m, int r) {
  return cl_float4{{static_cast<float>(m(r, 0)), static_cast<float>(m(r, 1)), static_cast<float>(m(r, 2)),
                    static_cast<float>(m(r, 3))}};
}

int interp_define(ResampleInterpolation interpolation) {
  switch (interpolation) {
    case ResampleInterpolation::kNearest:
      return 0;
    case ResampleInterpolation::kLinear:
      return 1;
    case ResampleInterpolation::kCubic:
      return 2;
  }
  return 1;
}

}  // namespace

std::optional<ResampleInterpolation> parse_resample_interpolation(std::string_view name) {
  if (name == "nearest") return ResampleInterpolation::kNearest;
  if (name == "linear") return ResampleInterpolation::kLinear;
  if (name == "cubic") return ResampleInterpolation::kCubic;
  return std::nullopt;
}

const char* to_string(ResampleInterpolation interpolation) {
  switch (interpolation) {
    case ResampleInterpolation::kNearest:
      return "nearest";
    case ResampleInterpolation::kLinear:
      return "linear";
    case ResampleInterpolation::kCubic:
      return "cubic";
  }
  return "?";
}

Eigen::Matrix4d inverse_affine(const Eigen::Matrix4d& affine, std::string_view what) {
  const double det = affine.topLeftCorner<3, 3>().determinant();
  if (!affine.allFinite() || !std::isfinite(det) || std::abs(det) < 1e-12 ||
      (affine.row(3) - Eigen::RowVector4d(0, 0, 0, 1)).cwiseAbs().maxCoeff() > 1e-9) {
    throw std::invalid_argument(fmt::format("{}: the affine is not invertible (determinant {:.3g})", what, det));
  }
  return affine.inverse();
}

Image resample(Device& device, const Image& input, const ImageHeader& reference,
               const std::vector<SpatialTransform>& chain, ResampleInterpolation interpolation, float outside,
               const std::function<void(int64_t done, int64_t total)>& progress) {
  const Eigen::Matrix4d to_input_voxel = inverse_affine(input.header().affine, "resample: the input image");
  inverse_affine(reference.affine, "resample: the reference grid");
  for (size_t i = 0; i < chain.size(); ++i) {
    if (const auto* affine = std::get_if<Eigen::Matrix4d>(&chain[i])) {
      inverse_affine(*affine, fmt::format("resample: transform {}", i + 1));
    } else {
      const Image& field = *std::get<std::shared_ptr<const Image>>(chain[i]);
      if (field.nt() != 3)
        throw std::invalid_argument(fmt::format("resample: transform {} is a field without 3 components", i + 1));
      inverse_affine(field.header().affine, fmt::format("resample: the grid of displacement field {}", i + 1));
    }
  }
  for (int64_t d : input.header().dims) {
    if (d > (int64_t{1} << 20)) throw std::invalid_argument("resample: input too large");
  }
  ImageHeader out_header = input.header();
  out_header.dims = reference.dims;
  out_header.voxel_mm = reference.voxel_mm;
  out_header.affine = reference.affine;
  out_header.xform_code = reference.xform_code;
  Image out(out_header);
  const auto count = static_cast<size_t>(reference.dims[0] * reference.dims[1] * reference.dims[2]);
  const auto in_count = static_cast<size_t>(input.header().voxels_per_volume());
  if (count == 0 || in_count == 0) return out;

  cl_command_queue q = device.queue();
  DeviceBuffer<cl_float4> pos(device, count);
  const ClKernel world = device.kernel(kSource, "world_positions");
  set_args(world, pos, static_cast<int>(reference.dims[0]), static_cast<int>(reference.dims[1]),
           static_cast<int>(reference.dims[2]), matrix_row(reference.affine, 0), matrix_row(reference.affine, 1),
           matrix_row(reference.affine, 2));
  launch<1>(q, world, {count}, {kGroup}, {}, EventMode::kNone);
  const ClKernel affine = device.kernel(kSource, "affine_positions");
  const ClKernel displace = device.kernel(kSource, "field_positions");
  std::vector<DeviceBuffer<float>> fields;  // kept until the queue has finished with them
  for (const SpatialTransform& t : chain) {
    if (const auto* m = std::get_if<Eigen::Matrix4d>(&t)) {
      set_args(affine, pos, static_cast<cl_ulong>(count), matrix_row(*m, 0), matrix_row(*m, 1), matrix_row(*m, 2));
      launch<1>(q, affine, {count}, {kGroup}, {}, EventMode::kNone);
      continue;
    }
    const Image& field = *std::get<std::shared_ptr<const Image>>(t);
    fields.emplace_back(device, field.data().size());
    fields.back().write(q, field.data());
    const Eigen::Matrix4d to_field = field.header().affine.inverse();
    set_args(displace, pos, static_cast<cl_ulong>(count), fields.back(), static_cast<int>(field.nx()),
             static_cast<int>(field.ny()), static_cast<int>(field.nz()), matrix_row(to_field, 0),
             matrix_row(to_field, 1), matrix_row(to_field, 2));
    launch<1>(q, displace, {count}, {kGroup}, {}, EventMode::kNone);
  }
  const ClKernel sample =
      device.kernel(kSource, "sample_positions", {fmt::format("INTERP={}", interp_define(interpolation))});
  DeviceBuffer<float> in_volume(device, in_count);
  DeviceBuffer<float> out_volume(device, count);
  for (int64_t t = 0; t < input.nt(); ++t) {
    in_volume.write(q, input.volume(t));
    set_args(sample, in_volume, cl_ulong{0}, static_cast<int>(input.nx()), static_cast<int>(input.ny()),
             static_cast<int>(input.nz()), pos, out_volume, cl_ulong{0}, static_cast<cl_ulong>(count),
             matrix_row(to_input_voxel, 0), matrix_row(to_input_voxel, 1), matrix_row(to_input_voxel, 2), outside);
    launch<1>(q, sample, {count}, {kGroup}, {}, EventMode::kNone);
    out_volume.read(q, out.volume(t));
    if (progress) progress(t + 1, input.nt());
  }
  return out;
}

void resample_on_device(Device& device, const DeviceBuffer<float>& in, const std::array<int64_t, 3>& in_dims,
                        DeviceBuffer<float>& out, const std::array<int64_t, 3>& out_dims,
                        const Eigen::Matrix4d& out_voxel_to_in_voxel, int64_t volumes,
                        ResampleInterpolation interpolation, float outside) {
  inverse_affine(out_voxel_to_in_voxel, "resample: the voxel mapping");
  const auto in_count = static_cast<size_t>(in_dims[0] * in_dims[1] * in_dims[2]);
  const auto out_count = static_cast<size_t>(out_dims[0] * out_dims[1] * out_dims[2]);
  if (volumes < 1 || in.size() < in_count * static_cast<size_t>(volumes) ||
      out.size() < out_count * static_cast<size_t>(volumes)) {
    throw std::invalid_argument(
        fmt::format("resample: buffers of {} and {} floats for {} volume(s) of {} and {} voxels", in.size(), out.size(),
                    volumes, in_count, out_count));
  }
  const ClKernel sample =
      device.kernel(kSource, "sample_affine", {fmt::format("INTERP={}", interp_define(interpolation))});
  for (int64_t t = 0; t < volumes; ++t) {
    set_args(sample, in, static_cast<cl_ulong>(in_count * static_cast<size_t>(t)), static_cast<int>(in_dims[0]),
             static_cast<int>(in_dims[1]), static_cast<int>(in_dims[2]), out,
             static_cast<cl_ulong>(out_count * static_cast<size_t>(t)), static_cast<int>(out_dims[0]),
             static_cast<int>(out_dims[1]), static_cast<int>(out_dims[2]), matrix_row(out_voxel_to_in_voxel, 0),
             matrix_row(out_voxel_to_in_voxel, 1), matrix_row(out_voxel_to_in_voxel, 2), outside);
    launch<1>(device.queue(), sample, {out_count}, {kGroup}, {}, EventMode::kNone);
  }
}

}  // namespace rtf
