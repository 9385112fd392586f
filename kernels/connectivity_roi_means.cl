// Per-region means of one volume: the ROI time courses of ROI x ROI connectivity and the seed's time course of
// seed correlation maps (a seed is one region). docs/algorithms/connectivity.md.
//
// Memory layout:
//   data     [slot][voxel] floats (a ring buffer or a contiguous series), NVOX voxels per slot, x fastest; the
//            volume read starts at element volume_offset = slot * NVOX (64-bit).
//   voxels   the regions' voxel indices, grouped by region, ascending within a region (a CSR column list)
//   offsets  [NROI + 1] ints: region r owns voxels[offsets[r] .. offsets[r + 1])
//   means    [slot][NROI] float2 (hi, lo): the mean is hi + lo, a float plus the remainder of its rounding (so a mean
//            of ~1000 keeps ~1e-10 relative accuracy rather than float's 6e-8, finer than the fluctuations of an ROI
//            average); a launch writes row `out_row`: means[out_row * NROI + r]
// NDRange: NROI * LOCAL_SIZE work-items, local LOCAL_SIZE: one work-group per region.
// Compile-time defines:
//   NROI        number of regions
//   LOCAL_SIZE  work-items per region, a power of two; 1 = one work-item sums the whole region with no barrier
//               (CPU devices, where work-group barriers are emulated and cost more than they save)
// The mean is over the region's finite voxels (NaN and Inf are skipped); NaN when there is none (an empty region, or
// all of its voxels non-finite in this volume; lo is then 0). Sums are compensated (connectivity_compensated.clh): each
// work-item keeps a (sum, error) pair and the group combines the pairs in a tree, so a region of 10^4 voxels of value
// ~1000 keeps its mean to ~1 ulp rather than losing log2(n) bits.

#include "connectivity_compensated.clh"

#ifndef LOCAL_SIZE
#define LOCAL_SIZE 1
#endif

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void roi_means(
    __global const float* restrict data, const ulong volume_offset, __global const int* restrict voxels,
    __global const int* restrict offsets, __global float2* restrict means, const int out_row) {
#if LOCAL_SIZE > 1
  __local float2 sums[LOCAL_SIZE];
  __local int counts[LOCAL_SIZE];
#endif
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  __global const float* volume = data + volume_offset;
  float2 acc = (float2)(0.0f, 0.0f);
  int count = 0;
  const int end = offsets[r + 1];
  for (int i = offsets[r] + lid; i < end; i += LOCAL_SIZE) {
    const float v = volume[voxels[i]];
    if (isfinite(v)) {
      acc = csum_add(acc, v);
      ++count;
    }
  }
#if LOCAL_SIZE > 1
  sums[lid] = acc;
  counts[lid] = count;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) {
      sums[lid] = csum_merge(sums[lid], sums[lid + s]);
      counts[lid] += counts[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  acc = sums[0];
  count = counts[0];
#endif
  if (lid == 0) means[(size_t)out_row * NROI + r] = count > 0 ? csum_divide(acc, (float)count) : (float2)(NAN, 0.0f);
}
