// Seed correlation maps: the Pearson correlation r of every voxel's time course with the seed's (the mean over the
// seed's voxels, connectivity_roi_means.cl), and its Fisher z = atanh(r), over a sliding window (recomputed from the
// window's volumes every TR) or cumulatively (running sums, one new volume per TR). docs/algorithms/connectivity.md.
//
// Memory layout:
//   data    [slot][voxel] floats (a ring buffer or a contiguous series), NVOX voxels per slot, x fastest; 64-bit
//           element offsets (slot * NVOX may exceed 2^31 for a long series)
//   seed    [slot] float2 (hi, lo): the seed's mean in each slot's volume, hi + lo (hi NaN: no finite seed voxel)
//   slots   [n] ints: the sliding window's slots, oldest first
//   state   [14][NVOX] floats, the cumulative per-voxel state, plane p at p * NVOX (x fastest within a plane):
//             0 x_ref, 1 and 13 s_ref (hi, lo): the shift, the voxel's and the seed's values at the voxel's first
//               accepted volume
//             2 n: accepted volumes (exact in float up to 2^24)
//             3,4 sum dx   5,6 sum ds   7,8 sum dx^2   9,10 sum ds^2   11,12 sum dx ds: (sum, error) pairs
//           with dx = x - x_ref, ds = s - s_ref. All zero before the first volume.
//   r, z    [NVOX] floats: the map and its Fisher z
// NDRange: NVOX work-items (1D), any local size; work-item v owns voxel v.
// Compile-time defines: NVOX (voxels per volume).
// A volume enters a voxel's sums only when both the voxel's value and the seed's are finite (pairwise-complete).
// r is NaN with fewer than 2 such volumes or when the voxel or the seed is constant over them.
// Numerics: sums of deviations from a per-voxel shift (the first value) instead of raw values, so the BOLD baseline
// (~1000 times the fluctuation) never enters a difference of large sums; sliding sums are plain float (n = W terms,
// recomputed every TR); cumulative sums are compensated, so 2,000+ TRs lose no more than a few ulps.

#include "connectivity_compensated.clh"

__kernel void seed_window_map(__global const float* restrict data, __global const float2* restrict seed,
                              __global const int* restrict slots, const int n, __global float* restrict r_out,
                              __global float* restrict z_out) {
  const int v = get_global_id(0);
  if (v >= NVOX) return;
  // The shift: the voxel's and the seed's values at the window's first volume where both are finite (normally the
  // first volume; the loop exits at once).
  float x_ref = 0.0f;
  float2 s_ref = (float2)(0.0f, 0.0f);
  for (int k = 0; k < n; ++k) {
    const int slot = slots[k];
    const float x = data[(size_t)slot * NVOX + v];
    const float2 s = seed[slot];
    if (isfinite(x) && isfinite(s.x)) {
      x_ref = x;
      s_ref = s;
      break;
    }
  }
  // Branch-free accumulation (work-items vectorise on CPU devices, no divergence on GPUs): a pair with a non-finite
  // value adds zeros and is not counted.
  float sx = 0.0f, ss = 0.0f, sxx = 0.0f, sss = 0.0f, sxs = 0.0f;
  int count = 0;
  for (int k = 0; k < n; ++k) {
    const int slot = slots[k];
    const float x = data[(size_t)slot * NVOX + v];
    const float2 s = seed[slot];
    const int ok = isfinite(x) && isfinite(s.x);
    const float dx = ok ? x - x_ref : 0.0f;
    const float ds = ok ? hilo_difference(s, s_ref) : 0.0f;
    sx += dx;
    ss += ds;
    sxx = fma(dx, dx, sxx);
    sss = fma(ds, ds, sss);
    sxs = fma(dx, ds, sxs);
    count += ok;
  }
  const float r = pearson_from_sums((float)count, sx, ss, sxx, sss, sxs);
  r_out[v] = r;
  z_out[v] = fisher_z(r);
}

#define PLANE(p) state[(size_t)(p)*NVOX + v]

inline float2 load_pair(__global const float* state, int p, int v) {
  return (float2)(PLANE(p), PLANE(p + 1));
}

inline void store_pair(__global float* state, int p, int v, float2 value) {
  PLANE(p) = value.x;
  PLANE(p + 1) = value.y;
}

// Adds the volume at `volume_offset` (seed value seed[seed_slot]) to every voxel's running sums, then writes the
// cumulative maps.
__kernel void seed_cumulative_map(__global const float* restrict data, const ulong volume_offset,
                                  __global const float2* restrict seed, const int seed_slot,
                                  __global float* restrict state, __global float* restrict r_out,
                                  __global float* restrict z_out) {
  const int v = get_global_id(0);
  if (v >= NVOX) return;
  const float x = data[volume_offset + v];
  const float2 s = seed[seed_slot];
  float n = PLANE(2);
  float2 sx = load_pair(state, 3, v), ss = load_pair(state, 5, v), sxx = load_pair(state, 7, v),
         sss = load_pair(state, 9, v), sxs = load_pair(state, 11, v);
  // Branch-free update: a non-finite pair adds zeros (TwoSum of +0 leaves a pair unchanged) and does not count.
  const int ok = isfinite(x) && isfinite(s.x);
  const int first = ok && n == 0.0f;
  if (first) {
    PLANE(0) = x;
    PLANE(1) = s.x;
    PLANE(13) = s.y;
  }
  const float x_ref = first ? x : PLANE(0);
  const float2 s_ref = first ? s : (float2)(PLANE(1), PLANE(13));
  const float dx = ok ? x - x_ref : 0.0f;
  const float ds = ok ? hilo_difference(s, s_ref) : 0.0f;
  n += ok ? 1.0f : 0.0f;
  sx = csum_add(sx, dx);
  ss = csum_add(ss, ds);
  sxx = csum_add_product(sxx, dx, dx);
  sss = csum_add_product(sss, ds, ds);
  sxs = csum_add_product(sxs, dx, ds);
  PLANE(2) = n;
  store_pair(state, 3, v, sx);
  store_pair(state, 5, v, ss);
  store_pair(state, 7, v, sxx);
  store_pair(state, 9, v, sss);
  store_pair(state, 11, v, sxs);
  const float r =
      pearson_from_sums(n, csum_value(sx), csum_value(ss), csum_value(sxx), csum_value(sss), csum_value(sxs));
  r_out[v] = r;
  z_out[v] = fisher_z(r);
}
