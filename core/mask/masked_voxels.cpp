// masked_voxels: one pass over the mask; the upload waits for its write.
#include "core/mask/masked_voxels.hpp"

#include <algorithm>

namespace rtf {

std::vector<int> masked_voxels(std::span<const uint8_t> mask) {
  std::vector<int> out;
  for (size_t v = 0; v < mask.size(); ++v) {
    if (mask[v] != 0) out.push_back(static_cast<int>(v));
  }
  return out;
}

DeviceBuffer<int> upload_masked_voxels(const Device& device, std::span<const int> indices) {
  DeviceBuffer<int> buffer(device, std::max<size_t>(indices.size(), 1));
  if (!indices.empty()) buffer.write(device.queue(), indices);
  return buffer;
}

}  // namespace rtf
