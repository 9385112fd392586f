// Kernel trace: events kept per name, resolved in batches (so that few stay pending) and summarised at exit.
#include "core/device/kernel_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace rtf {

namespace {

class Trace {
 public:
  ~Trace() {
    const std::lock_guard lock(mutex_);
    resolve();
    if (times_.empty()) return;
    std::fprintf(stderr, "kernel trace (device time, ms): name, count, total, median, max\n");
    for (auto& [name, ms] : times_) {
      std::sort(ms.begin(), ms.end());
      double total = 0;
      for (const double t : ms) total += t;
      std::fprintf(stderr, "%s\n",
                   fmt::format("  {:<32} {:>7} {:>10.3f} {:>9.4f} {:>9.4f}", name, ms.size(), total, ms[ms.size() / 2],
                               ms.back())
                       .c_str());
    }
  }
  void record(std::string_view name, cl_event event) {
    const std::lock_guard lock(mutex_);
    clRetainEvent(event);
    pending_.emplace_back(std::string(name), event);
    if (pending_.size() >= 4096) resolve();
  }

 private:
  void resolve() {
    for (auto& [name, event] : pending_) {
      cl_ulong start = 0, end = 0;
      if (clWaitForEvents(1, &event) == CL_SUCCESS &&
          clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr) == CL_SUCCESS &&
          clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr) == CL_SUCCESS) {
        times_[name].push_back(end > start ? static_cast<double>(end - start) * 1e-6 : 0.0);
      }
      clReleaseEvent(event);
    }
    pending_.clear();
  }
  std::mutex mutex_;
  std::vector<std::pair<std::string, cl_event>> pending_;
  std::map<std::string, std::vector<double>> times_;
};

Trace& trace() {
  static Trace t;
  return t;
}

}  // namespace

bool kernel_trace_enabled() {
  static const bool enabled = std::getenv("RTFMRI_TRACE_KERNELS") != nullptr;
  return enabled;
}

void kernel_trace_record(std::string_view name, cl_event event) {
  if (event != nullptr) trace().record(name, event);
}

void kernel_trace_record(cl_kernel kernel, cl_event event) {
  char name[128] = {};
  clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof(name) - 1, name, nullptr);
  kernel_trace_record(std::string_view(name), event);
}

}  // namespace rtf
