// preferred_vector_width: CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT on CPU devices, 1 elsewhere.
#include "core/device/vector_width.hpp"

#include "core/device/cl_error.hpp"

namespace rtf {

int preferred_vector_width(const Device& device) {
  if (!device.info().is_cpu()) return 1;
  cl_uint native = 0;
  RTF_CL_CHECK(clGetDeviceInfo(device.id(), CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof(native), &native, nullptr));
  return native >= 16 ? 16 : native >= 8 ? 8 : 4;
}

}  // namespace rtf
