// Cluster statistics of a batch of statistic maps (core/permutation/clusters.cpp), FSL randomise's cluster extent (-c)
// and cluster mass (-C): clusters are the connected components (6, 18 or 26 neighbours) of the masked voxels whose
// statistic t is > the threshold; a cluster's extent is its voxel count, its mass the sum of (t - threshold).
//
// Labelling: union-find with atomic_min (Oliveira & Lotufo 2010; Playne & Hawick 2018), not iterated min-label
// propagation. It takes a fixed three launches (init, merge, resolve) whatever the clusters' shapes and needs no
// convergence flag read back by the host, whereas propagation takes a number of sweeps that grows with a cluster's
// length (each a launch plus a round trip; a winding cluster of a 91x109x91 map needs dozens even with pointer
// jumping). A label only ever decreases and always names a voxel of the same cluster with a smaller index, so the
// root of a cluster is its smallest mask index. Reads during merge may be stale: atomic_min returns the true value, and
// a union retries until it links two roots (or finds them equal).
//
// Mass: fixed point, round((t - threshold) * 2^24) summed as 64 bits through two uint atomics (the low word, then the
// high word plus the carry the low word's add produced). The sum is exact and does not depend on the order of the adds,
// so results are reproducible on every device; a float CAS loop would depend on the order and serialise the adds of a
// large cluster. Where t and the threshold are >= 0.5, t - threshold is a multiple of 2^-24 and the mass is exact;
// elsewhere each voxel is off by at most 2^-25. Each voxel adds at most `cap` (host: chosen so no sum can overflow).
//
// Memory layout (V = voxels of the mask in ascending full-grid index, x fastest; B = maps of the launch; K = the
// neighbours that precede a voxel in the grid: 3, 9 or 13; G = work-groups over V):
//   maps              float [B][V]: the statistic, voxel fastest
//   nbr               int [K][V]: the mask index of voxel v's k-th preceding neighbour; -1 outside the grid or mask
//   label             int [B][V]: -1 at or below the threshold, else a parent (a mask index); after resolve, the root
//   size              uint [B][V]: at a root, the cluster's extent (0 elsewhere)
//   mass_lo, mass_hi  uint [B][V]: at a root, the cluster's fixed-point mass, low and high words (0 elsewhere)
//   part_size         uint [B][G], part_mass ulong [B][G]: each work-group's largest extent and mass
//   result            ulong [B][2]: each map's largest extent and largest mass (fixed point), read back in one copy
// Defines: K, WG (work-group size, a power of two). NDRange: 2D, global (V rounded up to WG, B), local (WG, 1);
// map_max: 1D, global B * WG, local WG.

#include "connected_components.clh"

#define FIXED_SCALE 16777216.0f  // 2^24

__kernel void cluster_init(__global const float* restrict maps, const int voxels, const float threshold,
                           __global int* restrict label, __global uint* restrict size, __global uint* restrict mass_lo,
                           __global uint* restrict mass_hi) {
  const int v = get_global_id(0);
  if (v >= voxels) return;
  const size_t i = get_global_id(1) * (size_t)voxels + v;
  label[i] = maps[i] > threshold ? v : -1;
  size[i] = 0;
  mass_lo[i] = 0;
  mass_hi[i] = 0;
}

__kernel void cluster_merge(__global const float* restrict maps, __global const int* restrict nbr, const int voxels,
                            const float threshold, volatile __global int* label) {
  const int v = get_global_id(0);
  if (v >= voxels) return;
  const size_t base = get_global_id(1) * (size_t)voxels;
  __global const float* t = maps + base;
  if (!(t[v] > threshold)) return;
  for (int k = 0; k < K; ++k) {
    const int n = nbr[(size_t)k * voxels + v];
    if (n >= 0 && t[n] > threshold) unite(label + base, v, n);
  }
}

// Each supra-threshold voxel finds its root, stores it as its label and adds itself to the root's extent and mass.
__kernel void cluster_resolve(__global const float* restrict maps, const int voxels, const float threshold,
                              const float cap, __global int* label, __global uint* size, __global uint* mass_lo,
                              __global uint* mass_hi) {
  const int v = get_global_id(0);
  if (v >= voxels) return;
  const size_t base = get_global_id(1) * (size_t)voxels;
  const float t = maps[base + v];
  if (!(t > threshold)) return;
  __global int* l = label + base;
  int root = v;
  while (l[root] != root) root = l[root];  // others shorten paths meanwhile: every value read is an ancestor
  l[v] = root;
  atomic_inc(&size[base + root]);
  const ulong q = convert_ulong_rte(fmin(t - threshold, cap) * FIXED_SCALE);
  const uint lo = (uint)q;
  uint hi = (uint)(q >> 32);
  const uint before = atomic_add(&mass_lo[base + root], lo);
  if (before + lo < before) ++hi;  // the low word wrapped: carry
  if (hi != 0) atomic_add(&mass_hi[base + root], hi);
}

// Each work-group's largest extent and mass (non-roots hold 0).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void cluster_group_max(
    __global const uint* restrict size, __global const uint* restrict mass_lo, __global const uint* restrict mass_hi,
    const int voxels, __global uint* restrict part_size, __global ulong* restrict part_mass) {
  __local uint ls[WG];
  __local ulong lm[WG];
  const int v = get_global_id(0);
  const int lid = get_local_id(0);
  const size_t i = get_global_id(1) * (size_t)voxels + v;
  const bool valid = v < voxels;
  ls[lid] = valid ? size[i] : 0;
  lm[lid] = valid ? upsample(mass_hi[i], mass_lo[i]) : 0;
  for (int span = WG / 2; span > 0; span /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < span) {
      ls[lid] = max(ls[lid], ls[lid + span]);
      lm[lid] = max(lm[lid], lm[lid + span]);
    }
  }
  if (lid == 0) {
    const size_t out = get_global_id(1) * get_num_groups(0) + get_group_id(0);
    part_size[out] = ls[0];
    part_mass[out] = lm[0];
  }
}

// One work-group per map: the largest of its `groups` partial maxima.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void cluster_map_max(__global const uint* restrict part_size,
                                                                              __global const ulong* restrict part_mass,
                                                                              const int groups,
                                                                              __global ulong* restrict result) {
  __local uint ls[WG];
  __local ulong lm[WG];
  const int b = get_group_id(0);
  const int lid = get_local_id(0);
  uint s = 0;
  ulong m = 0;
  for (int g = lid; g < groups; g += WG) {
    s = max(s, part_size[(size_t)b * groups + g]);
    m = max(m, part_mass[(size_t)b * groups + g]);
  }
  ls[lid] = s;
  lm[lid] = m;
  for (int span = WG / 2; span > 0; span /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < span) {
      ls[lid] = max(ls[lid], ls[lid + span]);
      lm[lid] = max(lm[lid], lm[lid + span]);
    }
  }
  if (lid == 0) {
    result[2 * b] = ls[0];
    result[2 * b + 1] = lm[0];
  }
}
