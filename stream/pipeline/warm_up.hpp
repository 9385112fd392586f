// Warm-up: every kernel a run's stages need, built before the server accepts the run's first volume. A cold program
// cache takes seconds on a GPU and tens of seconds on PoCL; without a warm-up the first volume waits for it and the
// volumes arriving meanwhile are skipped. Two synthetic volumes on the runs' grid go through a throw-away RunPipeline
// (every stage the config enables, its files in a scratch directory that is removed), which leaves each program in the
// device's program cache (and on disk) for the real run. docs/live.md ("Warm-up").
#pragma once

#include <string>

#include "core/device/device.hpp"
#include "core/image/image.hpp"
#include "stream/pipeline/pipeline_config.hpp"

namespace rtf::stream {

// Whether `spec` is a grid spec: NXxNYxNZ@MM or NXxNYxNZ@MXxMYxMZ (voxel sizes in mm).
bool is_grid_spec(const std::string& spec);

// The grid of a warm spec (PipelineConfig::warm): a grid spec (affine: the voxel sizes, centred on the origin) or a
// NIfTI file's grid (its affine). Throws std::invalid_argument naming the spec when it is neither.
ImageHeader warm_grid(const std::string& spec);

struct WarmUpReport {
  double seconds = 0.0;
  int compiled = 0;         // programs built from source
  int from_disk_cache = 0;  // programs loaded from the on-disk binary cache
  std::string stages;       // the stages that ran, comma-separated
};

// Runs two synthetic volumes on `grid` through the stages `config` enables (outputs off). Throws what the stages'
// set-up throws (e.g. a kernel that does not build on this device).
WarmUpReport warm_up(Device& device, const PipelineConfig& config, const ImageHeader& grid);

}  // namespace rtf::stream
