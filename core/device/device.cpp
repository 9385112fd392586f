// Device construction (context, queues) and kernel creation through the program cache.
#include "core/device/device.hpp"

#include "core/device/cl_error.hpp"
#include "core/device/kernel_sources.hpp"

namespace rtf {

Device::Device(const DeviceInfo& info) : info_(info) {
  cl_device_id dev = info_.device;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(info_.platform),
                                         0};
  context_ = ClContext(RTF_CL_CREATE(clCreateContext(props, 1, &dev, nullptr, nullptr, &rtf_cl_err)));
  queue_ = ClQueue(RTF_CL_CREATE(clCreateCommandQueue(context_.get(), dev, CL_QUEUE_PROFILING_ENABLE, &rtf_cl_err)));
  transfer_queue_ = ClQueue(RTF_CL_CREATE(clCreateCommandQueue(context_.get(), dev, 0, &rtf_cl_err)));
  programs_ = std::make_unique<ProgramCache>(context_.get(), info_, ProgramCache::default_disk_dir());
}

Device::~Device() {
  // Unchecked on purpose: a destructor never throws, and a failed wait leaves nothing else to do.
  if (transfer_queue_) clFinish(transfer_queue_.get());
  if (queue_) clFinish(queue_.get());
}

std::unique_ptr<Device> Device::open(const std::string& spec) {
  return std::make_unique<Device>(select_device(spec));
}

ClKernel Device::kernel(std::string_view file, std::string_view kernel_name, const std::vector<std::string>& defines) {
  std::string options = "-cl-std=CL1.2";
  for (const auto& d : defines) options += " -D" + d;
  const std::string name(file);
  cl_program program = programs_->get(name, kernel_source(file), options);
  const std::string kname(kernel_name);
  return ClKernel(RTF_CL_CREATE(clCreateKernel(program, kname.c_str(), &rtf_cl_err)));
}

void Device::finish() const {
  RTF_CL_CHECK(clFinish(transfer_queue_.get()));
  RTF_CL_CHECK(clFinish(queue_.get()));
}

bool Device::has_fp64() const {
  size_t bytes = 0;
  RTF_CL_CHECK(clGetDeviceInfo(id(), CL_DEVICE_EXTENSIONS, 0, nullptr, &bytes));
  std::string extensions(bytes, '\0');
  RTF_CL_CHECK(clGetDeviceInfo(id(), CL_DEVICE_EXTENSIONS, bytes, extensions.data(), nullptr));
  return extensions.find("cl_khr_fp64") != std::string::npos;
}

}  // namespace rtf
