// A volume's range, its non-finite voxels and its intensity centre of mass, on the device
// (core/registration/device_volume.hpp): with SANITIZE the kernel also sets every non-finite voxel to 0 in place and
// writes a byte per voxel (1: the value was finite).
//
// Memory layout: `v` is n floats; `mask` (with HAS_MASK) a byte per voxel, nonzero = counted in the range; `finite`
// (with SANITIZE) a byte per voxel; `partial` RANGE_TERMS floats per work-group: the non-finite voxels, the smallest
// and the largest finite value (over the mask's voxels with HAS_MASK; +inf / -inf when there is none). NDRange: 1D, any
// number of groups of a power-of-two size; each item strides over the voxels; `scratch` holds RANGE_TERMS floats per
// work-item.
#define RANGE_TERMS 7

__kernel void volume_range_partials(__global float* v, const ulong n, const int nx, const int ny,
#ifdef HAS_MASK
                                    __global const uchar* mask,
#endif
#ifdef SANITIZE
                                    __global uchar* finite,
#endif
                                    __global float* partial, __local float* scratch) {
  float bad = 0.0f, lo = INFINITY, hi = -INFINITY, mass = 0.0f, mx = 0.0f, my = 0.0f, mz = 0.0f;
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) {
    const float x = v[i];
    const int ok = isfinite(x);
#ifdef SANITIZE
    finite[i] = ok ? 1 : 0;
    if (!ok) v[i] = 0.0f;
#endif
    if (!ok) {
      bad += 1.0f;
      continue;
    }
    if (x > 0.0f) {
      mass += x;
      mx += x * (float)(i % nx);
      my += x * (float)((i / nx) % ny);
      mz += x * (float)(i / ((size_t)nx * ny));
    }
#ifdef HAS_MASK
    if (mask[i] == 0) continue;
#endif
    lo = fmin(lo, x);
    hi = fmax(hi, x);
  }
  const size_t lid = get_local_id(0);
  scratch[lid * RANGE_TERMS] = bad;
  scratch[lid * RANGE_TERMS + 1] = lo;
  scratch[lid * RANGE_TERMS + 2] = hi;
  scratch[lid * RANGE_TERMS + 3] = mass;
  scratch[lid * RANGE_TERMS + 4] = mx;
  scratch[lid * RANGE_TERMS + 5] = my;
  scratch[lid * RANGE_TERMS + 6] = mz;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) {
      __local float* a = scratch + lid * RANGE_TERMS;
      __local const float* b = scratch + (lid + s) * RANGE_TERMS;
      a[0] += b[0];
      a[1] = fmin(a[1], b[1]);
      a[2] = fmax(a[2], b[2]);
      for (int k = 3; k < RANGE_TERMS; ++k) a[k] += b[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    for (int k = 0; k < RANGE_TERMS; ++k) partial[get_group_id(0) * RANGE_TERMS + k] = scratch[k];
  }
}
