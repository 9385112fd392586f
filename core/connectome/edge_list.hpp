// The device's list of thresholded pairs (kernels/edge_list.clh), shared by the correlation and Kendall tiles: a
// counter and `capacity` edges stored as the host's Edge structs, so one read moves them. A launch whose edges
// overflow the list is repeated by the caller on less work (the count tells).
#pragma once

#include <cstdint>
#include <vector>

#include "core/connectome/thresholded_correlation.hpp"
#include "core/device/buffer.hpp"

namespace rtf {

class DeviceEdgeList {
 public:
  DeviceEdgeList(Device& device, int64_t capacity);
  int capacity() const { return capacity_; }
  const DeviceBuffer<int32_t>& count() const { return count_; }
  const DeviceBuffer<int32_t>& edges() const { return edges_; }
  void reset(cl_command_queue q);  // count = 0, before a launch
  // The launch's edge count; when it fits, its edges are read and passed to `sink` (not called for none). Returns
  // the count, so that a caller seeing more than capacity() splits the launch. With `after` (the launch's event) the
  // reads may go on another queue (the device's transfer queue) while the compute queue runs the next launch.
  int64_t drain(cl_command_queue q, const EdgeSink& sink, cl_event after = nullptr);

 private:
  int capacity_ = 0;
  DeviceBuffer<int32_t> count_, edges_;
  std::vector<Edge> host_;
};

}  // namespace rtf
