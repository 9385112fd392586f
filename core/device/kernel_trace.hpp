// Kernel trace: with RTFMRI_TRACE_KERNELS set in the environment, every launch() and buffer read takes a profiled event
// and the process prints, when it exits, each kernel's (and the reads') count and device time (total, median, max) to
// stderr: where a stage's device time goes, without instrumenting its code. Off (one flag test per launch) otherwise.
#pragma once

#include <CL/cl.h>

#include <string_view>

namespace rtf {

// Whether RTFMRI_TRACE_KERNELS is set (read once).
bool kernel_trace_enabled();
// Records a command's profiled event under `name` (a kernel's function name, or a kind of transfer).
void kernel_trace_record(std::string_view name, cl_event event);
// The kernel's function name, for kernel_trace_record.
void kernel_trace_record(cl_kernel kernel, cl_event event);

}  // namespace rtf
