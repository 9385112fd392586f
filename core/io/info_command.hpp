// `rtfmri info`'s work: the header and simple statistics of NIfTI images on stdout (dims, voxel size, TR, datatype,
// affine, mean intensity, median temporal SNR inside a quick intensity mask).
#pragma once

#include <string>
#include <vector>

namespace rtf {

void run_info_command(const std::vector<std::string>& files);

}  // namespace rtf
