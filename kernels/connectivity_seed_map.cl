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
// NDRange: ceil(NVOX / VEC) work-items (1D), any local size; work-item i owns voxels i * VEC .. i * VEC + VEC - 1 (its
// lanes; the last group may be partial: its lanes past NVOX read zeros and are never written).
// Compile-time defines: NVOX (voxels per volume), VEC (voxels per work-item: 1, 2, 4, 8 or 16; default 1).
// A volume enters a voxel's sums only when both the voxel's value and the seed's are finite (pairwise-complete).
// r is NaN with fewer than 2 such volumes or when the voxel or the seed is constant over them.
// Numerics: sums of deviations from a per-voxel shift (the first value) instead of raw values, so the BOLD baseline
// (~1000 times the fluctuation) never enters a difference of large sums; sliding sums are plain float (n = W terms,
// recomputed every TR); cumulative sums are compensated, so 2,000+ TRs lose no more than a few ulps.

#include "connectivity_compensated.clh"

// VEC voxels from v0 of a [NVOX] row: a whole group as one vector load, the last, partial group element by element.
inline vfloat load_lanes(__global const float* row, int v0) {
#if VEC == 1
  return row[v0];
#else
  if (v0 + VEC <= NVOX) return CONN_CAT(vload, VEC)(0, row + v0);
  float tmp[VEC];
  for (int i = 0; i < VEC; ++i) tmp[i] = v0 + i < NVOX ? row[v0 + i] : 0.0f;
  return CONN_CAT(vload, VEC)(0, tmp);
#endif
}

inline void store_lanes(vfloat x, __global float* row, int v0) {
#if VEC == 1
  row[v0] = x;
#else
  if (v0 + VEC <= NVOX) {
    CONN_CAT(vstore, VEC)(x, 0, row + v0);
    return;
  }
  float tmp[VEC];
  CONN_CAT(vstore, VEC)(x, 0, tmp);
  for (int i = 0; i < VEC && v0 + i < NVOX; ++i) row[v0 + i] = tmp[i];
#endif
}

// The lanes where both the voxel's value and the seed's are finite.
inline vint finite_pair(vfloat x, float2 s) {
  return isfinite(x) & (isfinite(s.x) ? LANE_TRUE : 0);
}

__kernel void seed_window_map(__global const float* restrict data, __global const float2* restrict seed,
                              __global const int* restrict slots, const int n, __global float* restrict r_out,
                              __global float* restrict z_out) {
  const int v0 = get_global_id(0) * VEC;
  if (v0 >= NVOX) return;
  // The shift: per lane, the voxel's and the seed's values at the window's first volume where both are finite
  // (normally the first volume; the loop exits at once).
  vfloat x_ref = (vfloat)(0.0f), s_ref_hi = (vfloat)(0.0f), s_ref_lo = (vfloat)(0.0f);
  vint found = (vint)(0);
  for (int k = 0; k < n; ++k) {
    const int slot = slots[k];
    const vfloat x = load_lanes(data + (size_t)slot * NVOX, v0);
    const float2 s = seed[slot];
    const vint take = finite_pair(x, s) & ~found;
    x_ref = SELECT(x_ref, x, take);
    s_ref_hi = SELECT(s_ref_hi, (vfloat)(s.x), take);
    s_ref_lo = SELECT(s_ref_lo, (vfloat)(s.y), take);
    found |= take;
    if (ALL_LANES(found)) break;
  }
  // Branch-free accumulation (no divergence on GPUs, straight vector code on CPU devices): a pair with a non-finite
  // value adds zeros and is not counted.
  vfloat sx = (vfloat)(0.0f), ss = (vfloat)(0.0f), sxx = (vfloat)(0.0f), sss = (vfloat)(0.0f), sxs = (vfloat)(0.0f);
  vint count = (vint)(0);
  for (int k = 0; k < n; ++k) {
    const int slot = slots[k];
    const vfloat x = load_lanes(data + (size_t)slot * NVOX, v0);
    const float2 s = seed[slot];
    const vint ok = finite_pair(x, s);
    const vfloat dx = SELECT((vfloat)(0.0f), x - x_ref, ok);
    // hilo_difference(s, s_ref) per lane
    const vfloat ds = SELECT((vfloat)(0.0f), ((vfloat)(s.x) - s_ref_hi) + ((vfloat)(s.y) - s_ref_lo), ok);
    sx += dx;
    ss += ds;
    sxx = fma(dx, dx, sxx);
    sss = fma(ds, ds, sss);
    sxs = fma(dx, ds, sxs);
    count += ok & 1;
  }
  const vfloat r = pearson_from_sums_lanes(TO_VFLOAT(count), sx, ss, sxx, sss, sxs);
  store_lanes(r, r_out, v0);
  store_lanes(fisher_z_lanes(r), z_out, v0);
}

#define PLANE(p) (state + (size_t)(p)*NVOX)

// Adds the volume at `volume_offset` (seed value seed[seed_slot]) to every voxel's running sums, then writes the
// cumulative maps.
__kernel void seed_cumulative_map(__global const float* restrict data, const ulong volume_offset,
                                  __global const float2* restrict seed, const int seed_slot,
                                  __global float* restrict state, __global float* restrict r_out,
                                  __global float* restrict z_out) {
  const int v0 = get_global_id(0) * VEC;
  if (v0 >= NVOX) return;
  const vfloat x = load_lanes(data + volume_offset, v0);
  const float2 s = seed[seed_slot];
  vfloat n = load_lanes(PLANE(2), v0);
  vfloat sx = load_lanes(PLANE(3), v0), sx_err = load_lanes(PLANE(4), v0);
  vfloat ss = load_lanes(PLANE(5), v0), ss_err = load_lanes(PLANE(6), v0);
  vfloat sxx = load_lanes(PLANE(7), v0), sxx_err = load_lanes(PLANE(8), v0);
  vfloat sss = load_lanes(PLANE(9), v0), sss_err = load_lanes(PLANE(10), v0);
  vfloat sxs = load_lanes(PLANE(11), v0), sxs_err = load_lanes(PLANE(12), v0);
  // Branch-free update: a non-finite pair adds zeros (TwoSum of +0 leaves a pair unchanged) and does not count.
  const vint ok = finite_pair(x, s);
  // The shift: the lane's first accepted pair, stored when some lane takes it (for VEC = 1 the stored shift is read
  // only when it is not this volume's).
  const vint first = ok & (n == 0.0f);
  const vfloat x_ref = SELECT(load_lanes(PLANE(0), v0), x, first);
  const vfloat s_ref_hi = SELECT(load_lanes(PLANE(1), v0), (vfloat)(s.x), first);
  const vfloat s_ref_lo = SELECT(load_lanes(PLANE(13), v0), (vfloat)(s.y), first);
  if (ANY_LANES(first)) {
    store_lanes(x_ref, PLANE(0), v0);
    store_lanes(s_ref_hi, PLANE(1), v0);
    store_lanes(s_ref_lo, PLANE(13), v0);
  }
  const vfloat dx = SELECT((vfloat)(0.0f), x - x_ref, ok);
  // hilo_difference(s, s_ref) per lane
  const vfloat ds = SELECT((vfloat)(0.0f), ((vfloat)(s.x) - s_ref_hi) + ((vfloat)(s.y) - s_ref_lo), ok);
  n += SELECT((vfloat)(0.0f), (vfloat)(1.0f), ok);
  csum_add_lanes(&sx, &sx_err, dx);
  csum_add_lanes(&ss, &ss_err, ds);
  csum_add_product_lanes(&sxx, &sxx_err, dx, dx);
  csum_add_product_lanes(&sss, &sss_err, ds, ds);
  csum_add_product_lanes(&sxs, &sxs_err, dx, ds);
  store_lanes(n, PLANE(2), v0);
  store_lanes(sx, PLANE(3), v0);
  store_lanes(sx_err, PLANE(4), v0);
  store_lanes(ss, PLANE(5), v0);
  store_lanes(ss_err, PLANE(6), v0);
  store_lanes(sxx, PLANE(7), v0);
  store_lanes(sxx_err, PLANE(8), v0);
  store_lanes(sss, PLANE(9), v0);
  store_lanes(sss_err, PLANE(10), v0);
  store_lanes(sxs, PLANE(11), v0);
  store_lanes(sxs_err, PLANE(12), v0);
  // csum_value per lane
  const vfloat r = pearson_from_sums_lanes(n, sx + sx_err, ss + ss_err, sxx + sxx_err, sss + sss_err, sxs + sxs_err);
  store_lanes(r, r_out, v0);
  store_lanes(fisher_z_lanes(r), z_out, v0);
}
