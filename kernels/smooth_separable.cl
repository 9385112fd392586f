// One pass of separable Gaussian smoothing along one axis, over a batch of volumes.
//
// Memory layout: `in`/`out` hold NVOL volumes, volume-major, x fastest:
//   index = ((t * nz + z) * ny + y) * nx + x.  `mask` and `certainty` are one 3D volume (nx*ny*nz).
// NDRange: global (nx, ny, nz * nvol) rounded up to the local size; items past the edge return.
// Compile-time defines:
//   AXIS          0 (x), 1 (y) or 2 (z)
//   RADIUS        filter half-width in voxels; `taps` has 2*RADIUS+1 entries summing to 1
//   NORMALIZE     divide by the sum of in-bounds taps (edge renormalisation, unmasked smoothing)
//   MASK_INPUT    multiply each input sample by mask (first pass of masked smoothing)
//   FINISH_MASKED divide by `certainty` (the mask smoothed the same way) and zero voxels outside mask
// Samples outside the volume count as missing (weight 0), never as zeros of the image.

__kernel void smooth_axis(__global const float* restrict in, __global float* restrict out,
                          __constant float* restrict taps, __global const uchar* restrict mask,
                          __global const float* restrict certainty, const int nx, const int ny, const int nz,
                          const int nvol) {
  const int x = get_global_id(0);
  const int y = get_global_id(1);
  const int zt = get_global_id(2);
  if (x >= nx || y >= ny || zt >= nz * nvol) return;
  const int z = zt % nz;
  const size_t plane = (size_t)nx * ny;
  const size_t voxel = (size_t)zt * plane + (size_t)y * nx + x;         // index in the batch
  const size_t voxel3d = (size_t)z * plane + (size_t)y * nx + x;        // index in one volume

#if AXIS == 0
  const int pos = x, len = nx;
  const size_t stride = 1;
#elif AXIS == 1
  const int pos = y, len = ny;
  const size_t stride = nx;
#else
  const int pos = z, len = nz;
  const size_t stride = plane;
#endif

  const int lo = max(-RADIUS, -pos);
  const int hi = min(RADIUS, len - 1 - pos);
  float sum = 0.0f;
#ifdef NORMALIZE
  float weight = 0.0f;
#endif
  for (int k = lo; k <= hi; ++k) {
    const float w = taps[k + RADIUS];
    const long offset = (long)k * (long)stride;
    float v = in[(size_t)((long)voxel + offset)];
#ifdef MASK_INPUT
    v = mask[(size_t)((long)voxel3d + offset)] ? v : 0.0f;
#endif
    sum += w * v;
#ifdef NORMALIZE
    weight += w;
#endif
  }
#ifdef NORMALIZE
  sum /= weight;
#endif
#ifdef FINISH_MASKED
  sum = mask[voxel3d] ? sum / certainty[voxel3d] : 0.0f;
#endif
  out[voxel] = sum;
}
