// The decoders' sample matrix on the device (docs/algorithms/decoding.md): for every run, the feature voxels' series
// detrended (the Detrender of core/temporal: Legendre polynomials and/or SPM's DCT set, the mean removed) and z-scored
// over the run's volumes (kernels/decoding_features.cl), the rows of the labelled volumes gathered into X, n samples x
// p features, row-major. Per-run scaling needs no labels, so no training fold sees its test data through it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/decoding/decoding_samples.hpp"
#include "core/device/buffer.hpp"
#include "core/device/device.hpp"
#include "core/image/image.hpp"

namespace rtf {

struct FeatureOptions {
  std::optional<int> poly_order = 1;        // Legendre detrending of this order (1: linear), none when empty
  std::optional<double> highpass_cutoff_s;  // SPM's DCT high-pass set, periods longer than this removed
  bool zscore = true;                       // z-score every feature over each run (else only the detrending)
};

struct SampleFeatures {
  DeviceBuffer<float> x;  // [samples][features]
  int64_t samples = 0, features = 0;
  int64_t constant_features = 0;  // features constant over some run (0 in that run's rows)
};

// The device memory sample_features needs: X plus the longest run's series.
int64_t sample_feature_bytes(int64_t samples, int64_t features, int64_t longest_run);

// `runs`: 4D images on one grid, samples.run indexing them; `voxels`: the feature voxels (indices into a volume,
// ascending). Throws std::invalid_argument for an empty voxel list, a non-finite value in a feature voxel (naming the
// run, volume and voxel), a run too short for its detrending, or data the device cannot hold (with the figures).
SampleFeatures sample_features(Device& device, std::span<const Image* const> runs, std::span<const int> voxels,
                               const DecodingSamples& samples, const FeatureOptions& options);

}  // namespace rtf
