// One pass of separable Gaussian smoothing along one axis, over a batch of volumes.
//
// Memory layout: `in`/`out` hold `nvol` volumes, volume-major, x fastest:
//   index = ((t * NZ + z) * NY + y) * NX + x.  `mask` and `certainty` are one 3D volume (NX*NY*NZ).
// The host guarantees NX*NY*NZ*nvol < 2^31, so indices are 32-bit.
// NDRange (rounded up to the local size; items past the edge return):
//   AXIS 0: (NX, NY, NZ * nvol)          one output per work-item
//   AXIS 1: (NX, NB, NZ * nvol)          BLOCK consecutive y outputs per work-item, NB = ceil(NY / BLOCK)
//   AXIS 2: (NX, NY, NB * nvol)          BLOCK consecutive z outputs per work-item, NB = ceil(NZ / BLOCK)
// Register blocking along y and z: a work-item loads BLOCK + 2*RADIUS samples once and reuses them for
// BLOCK outputs, so each input is fetched ~(BLOCK + 2R) / BLOCK times instead of 2R + 1 times.
// Compile-time defines:
//   NX, NY, NZ    grid size (the kernel is specialised per grid: constant strides and bounds)
//   AXIS          0 (x), 1 (y) or 2 (z)
//   RADIUS        filter half-width in voxels; `taps` has 2*RADIUS+1 entries summing to 1
//   BLOCK         outputs per work-item along AXIS (1 for AXIS 0, where neighbours coalesce instead)
//   NORMALIZE     divide by the sum of in-bounds taps (edge renormalisation, unmasked smoothing)
//   MASK_INPUT    multiply each input sample by mask (first pass of masked smoothing)
//   FINISH_MASKED divide by `certainty` (the mask smoothed the same way) and zero voxels outside mask
// Samples outside the volume count as missing (weight 0), never as zeros of the image. All work-items run
// the same fully unrolled code (predicated loads at the borders): no divergent edge path.

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
#ifndef BLOCK
#define BLOCK 1
#endif
#define NB ((LEN + BLOCK - 1) / BLOCK)
#define WINDOW (BLOCK + 2 * RADIUS)

#ifdef MASK_INPUT
#define SAMPLE(i, i3d) (mask[(i3d)] ? in[(i)] : 0.0f)
#else
#define SAMPLE(i, i3d) in[(i)]
#endif

#ifdef FINISH_MASKED
#define FINISH(s, i3d) (mask[(i3d)] ? (s) / certainty[(i3d)] : 0.0f)
#else
#define FINISH(s, i3d) (s)
#endif

__kernel void smooth_axis(__global const float* restrict in, __global float* restrict out,
                          __constant float* restrict taps, __global const uchar* restrict mask,
                          __global const float* restrict certainty, const int nvol) {
  const int x = get_global_id(0);
#if AXIS == 0
  const int y = get_global_id(1);
  const int zt = get_global_id(2);
  if (x >= NX || y >= NY || zt >= NZ * nvol) return;
  const int pos0 = x;
#elif AXIS == 1
  const int yb = get_global_id(1);
  const int zt = get_global_id(2);
  if (x >= NX || yb >= NB || zt >= NZ * nvol) return;
  const int pos0 = yb * BLOCK;
  const int y = pos0;
#else
  const int y = get_global_id(1);
  const int zb = get_global_id(2) % NB;
  const int t = get_global_id(2) / NB;
  if (x >= NX || y >= NY || t >= nvol) return;
  const int pos0 = zb * BLOCK;
  const int zt = t * NZ + pos0;
#endif
  const int base = (zt * NY + y) * NX + x;           // first output of the block, in the batch
  const int base3d = ((zt % NZ) * NY + y) * NX + x;  // the same voxel in one volume (mask, certainty)
  (void)base3d;

  // Branch-free: every work-item runs the same unrolled code. Samples outside [0, LEN) load as 0 and
  // contribute no weight, so border voxels renormalise without a divergent edge path.
  float w[WINDOW];
#ifdef NORMALIZE
  float inside[WINDOW];
#endif
#pragma unroll
  for (int i = 0; i < WINDOW; ++i) {
    const int p = pos0 - RADIUS + i;
    const bool ok = p >= 0 && p < LEN;
    const int offset = (i - RADIUS) * STRIDE;
    w[i] = ok ? SAMPLE(base + offset, base3d + offset) : 0.0f;
#ifdef NORMALIZE
    inside[i] = ok ? 1.0f : 0.0f;
#endif
  }
#pragma unroll
  for (int j = 0; j < BLOCK; ++j) {
    if (pos0 + j < LEN) {
      float sum = 0.0f;
#ifdef NORMALIZE
      float weight = 0.0f;
#endif
#pragma unroll
      for (int k = 0; k <= 2 * RADIUS; ++k) {
        sum = fma(taps[k], w[j + k], sum);
#ifdef NORMALIZE
        weight = fma(taps[k], inside[j + k], weight);
#endif
      }
#ifdef NORMALIZE
      sum /= weight;
#endif
      out[base + j * STRIDE] = FINISH(sum, base3d + j * STRIDE);
    }
  }
}
