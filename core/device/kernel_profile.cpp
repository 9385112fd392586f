// KernelProfile: pending profiled events and their summed device times per stage.
#include "core/device/kernel_profile.hpp"

#include "core/device/cl_error.hpp"

namespace rtf {

void KernelProfile::add(const std::string& stage, ClEvent first, ClEvent last) {
  if (!first || !last) return;
  pending_.push_back({stage, std::move(first), std::move(last)});
}

void KernelProfile::collect() {
  for (const Pending& p : pending_) {
    cl_event events[2] = {p.first.get(), p.last.get()};
    RTF_CL_CHECK(clWaitForEvents(2, events));
    cl_ulong start = 0, end = 0;
    RTF_CL_CHECK(clGetEventProfilingInfo(p.first.get(), CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr));
    RTF_CL_CHECK(clGetEventProfilingInfo(p.last.get(), CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr));
    total_ms_[p.stage] += end > start ? static_cast<double>(end - start) * 1e-6 : 0.0;
    launches_[p.stage] += 1;
  }
  pending_.clear();
}

void KernelProfile::reset() {
  pending_.clear();
  total_ms_.clear();
  launches_.clear();
}

}  // namespace rtf
