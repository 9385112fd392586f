// Looks up OpenCL C sources by file name ("smooth_separable.cl"): from $RTFMRI_KERNEL_DIR if set,
// else from the source tree when built with RTF_KERNELS_FROM_SOURCE, else from the copy embedded
// at build time. Lines `#include "name.clh"` are expanded from the same place.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rtf {

std::string kernel_source(std::string_view file_name);
std::vector<std::string> embedded_kernel_names();

}  // namespace rtf
