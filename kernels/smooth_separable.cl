// One pass of separable Gaussian smoothing along one axis, over a batch of volumes.
//
// Memory layout: `in`/`out` hold `nvol` volumes, volume-major, x fastest:
//   index = ((t * NZ + z) * NY + y) * NX + x.  `mask` and `certainty` are one 3D volume (NX*NY*NZ).
// NDRange: global (NX, NY, NZ * nvol) rounded up to the local size; items past the edge return.
// The host guarantees NX*NY*NZ*nvol < 2^31, so indices are 32-bit.
// Compile-time defines:
//   NX, NY, NZ    grid size (the kernel is specialised per grid: constant strides and bounds)
//   AXIS          0 (x), 1 (y) or 2 (z)
//   RADIUS        filter half-width in voxels; `taps` has 2*RADIUS+1 entries summing to 1
//   NORMALIZE     divide by the sum of in-bounds taps (edge renormalisation, unmasked smoothing)
//   MASK_INPUT    multiply each input sample by mask (first pass of masked smoothing)
//   FINISH_MASKED divide by `certainty` (the mask smoothed the same way) and zero voxels outside mask
// Samples outside the volume count as missing (weight 0), never as zeros of the image. Voxels at
// least RADIUS from both ends take a fully unrolled path; the rest loop over in-bounds taps only.

#if AXIS == 0
#define LEN NX
#define STRIDE 1
#elif AXIS == 1
#define LEN NY
#define STRIDE NX
#else
#define LEN NZ
#define STRIDE (NX * NY)
#endif

#if defined(MASK_INPUT) || defined(FINISH_MASKED)
#define NEEDS_VOXEL3D 1
#endif

__kernel void smooth_axis(__global const float* restrict in, __global float* restrict out,
                          __constant float* restrict taps, __global const uchar* restrict mask,
                          __global const float* restrict certainty, const int nvol) {
  const int x = get_global_id(0);
  const int y = get_global_id(1);
  const int zt = get_global_id(2);
  if (x >= NX || y >= NY || zt >= NZ * nvol) return;
  const int voxel = (zt * NY + y) * NX + x;  // index in the batch
#ifdef NEEDS_VOXEL3D
  const int voxel3d = ((zt % NZ) * NY + y) * NX + x;  // index in one volume
#endif
#if AXIS == 0
  const int pos = x;
#elif AXIS == 1
  const int pos = y;
#else
  const int pos = zt % NZ;
#endif

  float sum = 0.0f;
  if (pos >= RADIUS && pos < LEN - RADIUS) {
#pragma unroll
    for (int k = -RADIUS; k <= RADIUS; ++k) {
#ifdef MASK_INPUT
      const float v = mask[voxel3d + k * STRIDE] ? in[voxel + k * STRIDE] : 0.0f;
#else
      const float v = in[voxel + k * STRIDE];
#endif
      sum = fma(taps[k + RADIUS], v, sum);
    }
  } else {
    const int lo = max(-RADIUS, -pos);
    const int hi = min(RADIUS, LEN - 1 - pos);
    float weight = 0.0f;
    for (int k = lo; k <= hi; ++k) {
#ifdef MASK_INPUT
      const float v = mask[voxel3d + k * STRIDE] ? in[voxel + k * STRIDE] : 0.0f;
#else
      const float v = in[voxel + k * STRIDE];
#endif
      sum = fma(taps[k + RADIUS], v, sum);
      weight += taps[k + RADIUS];
    }
#ifdef NORMALIZE
    sum /= weight;
#endif
  }
#ifdef FINISH_MASKED
  sum = mask[voxel3d] ? sum / certainty[voxel3d] : 0.0f;
#endif
  out[voxel] = sum;
}
