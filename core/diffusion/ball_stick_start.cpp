// Host side of the device start: validation, the measurements transposed to [n][V], one launch, the states unpacked.
#include "core/diffusion/ball_stick_start.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "core/device/buffer.hpp"
#include "core/device/launch.hpp"
#include "core/diffusion/diffusion_data.hpp"

namespace rtf {

std::vector<BallStickParams> initialise_ball_stick_on_device(Device& device, const DiffusionScheme& scheme,
                                                             const float* data, int voxels, int fibres, int model,
                                                             std::vector<uint8_t>* fitted) {
  if (voxels < 0 || fibres < 1 || fibres > kBallStickMaxFibres || (model != 1 && model != 2) ||
      scheme.measurements() < 1 || scheme.bvecs.size() != scheme.bvals.size() || (voxels > 0 && data == nullptr)) {
    throw std::invalid_argument(fmt::format(
        "initialise_ball_stick_on_device: need voxels >= 0 (got {}), 1 <= fibres <= {} (got {}), model 1 or 2 (got "
        "{}) and a scheme with measurements (got {} b-values, {} bvecs)",
        voxels, kBallStickMaxFibres, fibres, model, scheme.bvals.size(), scheme.bvecs.size()));
  }
  if (!device.has_fp64()) {
    throw std::invalid_argument("initialise_ball_stick_on_device: the device has no fp64 (use the host's start)");
  }
  const auto un = static_cast<size_t>(scheme.measurements()), count = static_cast<size_t>(voxels);
  if (fitted != nullptr) fitted->clear();
  if (count == 0) return {};
  std::vector<float> y(un * count);
  for (size_t v = 0; v < count; ++v) {
    for (size_t i = 0; i < un; ++i) y[i * count + v] = data[v * un + i];
  }
  std::vector<double> s(4 * un);
  for (size_t i = 0; i < un; ++i) {
    s[4 * i] = scheme.bvals[i];
    for (size_t c = 0; c < 3; ++c) s[4 * i + 1 + c] = scheme.bvecs[i][c];
  }
  const cl_command_queue q = device.queue();
  DeviceBuffer<float> y_buffer(device, y.size(), CL_MEM_READ_ONLY);
  y_buffer.write(q, y);
  DeviceBuffer<double> scheme_buffer(device, s.size(), CL_MEM_READ_ONLY);
  scheme_buffer.write(q, s);
  DeviceBuffer<double> state(device, kBallStickQuantities * count);
  DeviceBuffer<uint8_t> ok(device, count);
  const ClKernel kernel = device.kernel("ball_stick_start.cl", "ball_stick_start",
                                        {fmt::format("NF={}", fibres), fmt::format("MODEL={}", model),
                                         fmt::format("B0_THRESHOLD={:.17g}", kB0Threshold)});
  set_args(kernel, y_buffer, scheme_buffer, static_cast<int>(un), voxels, state, ok);
  launch<1>(q, kernel, {round_up(count, 64)}, {64}, {}, EventMode::kNone);
  const std::vector<double> q_values = state.read_all(q);
  std::vector<BallStickParams> out(count);
  for (size_t v = 0; v < count; ++v) {
    BallStickVector p{};
    for (size_t k = 0; k < p.size(); ++k) p[k] = q_values[k * count + v];
    out[v] = unpack_params(p);
  }
  if (fitted != nullptr) *fitted = ok.read_all(q);
  return out;
}

}  // namespace rtf
