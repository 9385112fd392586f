// Reset, count and read back of the device's edge list.
#include "core/connectome/edge_list.hpp"

#include <algorithm>
#include <limits>
#include <span>

namespace rtf {

static_assert(sizeof(Edge) == 3 * sizeof(int32_t), "Edge is read as the kernels' int [3]");

DeviceEdgeList::DeviceEdgeList(Device& device, int64_t capacity)
    : capacity_(static_cast<int>(std::clamp<int64_t>(capacity, 1, std::numeric_limits<int32_t>::max() / 3))),
      count_(device, 1),
      edges_(device, 3 * static_cast<size_t>(capacity_)) {}

void DeviceEdgeList::reset(cl_command_queue q) {
  count_.fill(q, 0);
}

int64_t DeviceEdgeList::drain(cl_command_queue q, const EdgeSink& sink, cl_event after) {
  int32_t found = 0;
  RTF_CL_CHECK(clEnqueueReadBuffer(q, count_.get(), CL_TRUE, 0, sizeof(found), &found, after != nullptr ? 1 : 0,
                                   after != nullptr ? &after : nullptr, nullptr));
  if (found == 0 || found > capacity_) return found;
  host_.resize(static_cast<size_t>(found));
  edges_.read(q, std::span<int32_t>(reinterpret_cast<int32_t*>(host_.data()), 3 * host_.size()));
  sink(host_);
  return found;
}

}  // namespace rtf
