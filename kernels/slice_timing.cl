// Slice-timing correction: resamples every voxel's time series by its slice's interpolation filter.
//
// Memory layout: `in`/`out` hold NT volumes, volume-major, x fastest:
//   index = t * nvox + ((z * ny + y) * nx + x),  nvox = plane * nz,  plane = nx * ny.
// `taps` is [nz][2*RADIUS+1] floats: out(t) = sum_k taps[z][k + RADIUS] * in(mirror(t + k)), k = -RADIUS..RADIUS.
// NDRange: 1D, one work-item per voxel of a volume (global rounded up; items past nvox return); each
// item loops over t, so neighbouring items read neighbouring addresses (coalesced).
// Edges: whole-sample symmetric mirror, -1 -> 1, nt -> nt - 2 (folded as often as needed).
// `in` and `out` must not alias.
// Compile-time defines:
//   RADIUS  filter half-width in samples (volumes)

#define NTAPS (2 * RADIUS + 1)

inline int mirror_index(int i, const int n) {
  if (n <= 1) return 0;
  const int period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

__kernel void slice_time(__global const float* restrict in, __global float* restrict out,
                         __global const float* restrict taps, const int plane, const int nz, const int nt) {
  const int v = get_global_id(0);
  const int nvox = plane * nz;
  if (v >= nvox) return;
  const int z = v / plane;

  float w[NTAPS];
  for (int k = 0; k < NTAPS; ++k) w[k] = taps[z * NTAPS + k];

  for (int t = 0; t < nt; ++t) {
    float sum = 0.0f;
    if (t >= RADIUS && t + RADIUS < nt) {
      __global const float* p = in + (size_t)(t - RADIUS) * nvox + v;
      for (int k = 0; k < NTAPS; ++k) sum += w[k] * p[(size_t)k * nvox];
    } else {
      for (int k = 0; k < NTAPS; ++k) sum += w[k] * in[(size_t)mirror_index(t - RADIUS + k, nt) * nvox + v];
    }
    out[(size_t)t * nvox + v] = sum;
  }
}
