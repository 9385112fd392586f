// Threshold-free cluster enhancement of a batch of statistic maps (core/permutation/tfce.hpp):
// TFCE(v) = sum over h_k = float(k) * dh, k = 1, 2, ... up to the map's maximum, of e(h_k, v)^E * h_k^H * dh, where e
// is the voxel count of v's cluster among the masked voxels with t >= h_k (0 where t(v) < h_k).
//
// Method: the thresholds are walked from the top down. Going down, clusters only grow and merge, never split, so one
// union-find (connected_components.clh) serves every threshold: at h_k only the voxels that enter there (their level
// L = the largest k with h_k <= t is exactly k) are united with their active neighbours. Per batch: `levels` gives each
// voxel its level and counts the voxels per (level, map); the host reads the counts once (their prefix sums are the
// positions) and `sort` lists every map's voxels by level, the highest first, so that the voxels active at h_k are a
// prefix of the list and those entering at h_k a contiguous range. Then per threshold, from the batch's top level down
// to 1, three launches over only those ranges (no read back): `merge` (entering voxels unite with active neighbours),
// `count` (entering voxels add one to their root's extent; an old root that got linked hands its extent to its new
// root), `accumulate` (every active voxel adds extent^E * h^H * dh to its TFCE, compressing its path to the root).
// Finally `group_max` / `map_max` give each map's largest TFCE, read in one copy. Extents are exact integers, so the
// clusters, and hence the TFCE up to float rounding of the accumulation, are the same on every device.
//
// Memory layout (V = voxels of the mask in ascending full-grid index, x fastest; B = maps of the launch (<= MB);
// K = neighbours: 6, 18 or 26; G = work-groups over V; "position" = index into a map's level-sorted list):
//   maps          float [B][V]: the statistic, voxel fastest
//   nbr           int [V][K]: the mask indices of voxel v's neighbours (a row per voxel); -1 outside the grid or mask
//   extent_power  float [V + 1]: e^E (computed in double on the host)
//   level         int [B][V]: 0 below dh (negative, NaN), else 1..KMAX, KMAX + 1 above h_KMAX (refused by the host)
//   label         int [B][V]: union-find parent (a mask index); voxels not yet active are their own roots
//   size          uint [B][V]: at a root, its cluster's extent at the current threshold; 0 elsewhere
//   hist          uint [KMAX + 2][MB]: voxels per (level, map), levels >= 1; `sort` counts it back down to 0
//   start         int [KMAX + 2][MB]: row k = voxels with level >= k (written by the host; the row above the top level
//   is 0) top           int [MB]: each map's highest level order         int [B][V]: by position, the voxel; levels
//   descending, positions >= start[1] unused acc           float [B][V]: by position, the TFCE accumulated so far
//   part_max      float [B][G], result float [B]: each work-group's and each map's largest TFCE
// Defines: K, WG (work-group size, a power of two), MB (hist and start row length), KMAX, LB (levels counted in local
// memory first; higher ones go straight to global atomics), PER_VOXEL (CPU devices: merge loops over neighbours).
// NDRange: 2D, local (WG, 1); levels, sort: global (V, B); merge: (K x entering voxels of the fullest map, B), without
// K for PER_VOXEL; count, accumulate, group_max: (active voxels of the fullest map, B); map_max: 1D, global B * WG.

#include "connected_components.clh"

// The number of thresholds h_k = float(k) * dh (k >= 1) at or below t, capped at KMAX + 1.
inline int level_of(const float t, const float dh) {
  if (!(t >= dh)) return 0;  // below the first threshold, negative or NaN
  const float q = t / dh;
  if (!(q <= (float)KMAX)) return KMAX + 1;
  int k = (int)q;  // the division rounds: correct by the products themselves
  while (k > 0 && (float)k * dh > t) --k;
  while (k <= KMAX && (float)(k + 1) * dh <= t) ++k;
  return k;
}

// Per voxel: its level, label = itself, extent 0; per (level, map): the count, summed in local memory for levels <= LB.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void tfce_levels(
    __global const float* restrict maps, const int voxels, const float dh, __global int* restrict level,
    __global int* restrict label, __global uint* restrict size, __global uint* hist, __global int* top) {
  __local uint counts[LB + 1];
  __local int highest;
  const int lid = get_local_id(0);
  const int v = get_global_id(0);
  const int b = get_global_id(1);
  for (int j = lid; j <= LB; j += WG) counts[j] = 0;
  if (lid == 0) highest = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (v < voxels) {
    const size_t i = (size_t)b * voxels + v;
    const int l = level_of(maps[i], dh);
    level[i] = l;
    label[i] = v;
    size[i] = 0;
    if (l >= 1) {
      if (l <= LB) {
        atomic_inc(&counts[l]);
      } else {
        atomic_inc(&hist[(size_t)l * MB + b]);
      }
      atomic_max(&highest, l);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int j = lid + 1; j <= LB; j += WG) {
    if (counts[j] != 0) atomic_add(&hist[(size_t)j * MB + b], counts[j]);
  }
  if (lid == 0 && highest > 0) atomic_max(&top[b], highest);
}

// Lists each map's voxels of level >= 1 by level, the highest first: the voxels of level l fill positions
// [start[l + 1], start[l]). Each work-group reserves its share of a level with one atomic_sub on hist (which thus
// returns to 0) and ranks its voxels in local memory. Zeroes the TFCE at every listed position.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void tfce_sort(
    __global const int* restrict level, const int voxels, __global const int* restrict start, __global uint* hist,
    __global int* restrict order, __global float* restrict acc) {
  __local uint counts[LB + 1];
  __local int base[LB + 1];
  const int lid = get_local_id(0);
  const int v = get_global_id(0);
  const int b = get_global_id(1);
  for (int j = lid; j <= LB; j += WG) counts[j] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  const size_t row = (size_t)b * voxels;
  const int l = v < voxels ? level[row + v] : 0;
  uint rank = 0;
  if (l >= 1 && l <= LB) rank = atomic_inc(&counts[l]);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int j = lid + 1; j <= LB; j += WG) {
    const uint n = counts[j];
    if (n != 0) base[j] = start[(size_t)(j + 1) * MB + b] + (int)(atomic_sub(&hist[(size_t)j * MB + b], n) - n);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l < 1) return;
  int p;
  if (l <= LB) {
    p = base[l] + (int)rank;
  } else {
    p = start[(size_t)(l + 1) * MB + b] + (int)atomic_dec(&hist[(size_t)l * MB + b]) - 1;
  }
  order[row + p] = v;
  acc[row + p] = 0.0f;
}

// At threshold k: each voxel entering there unites with its neighbours already active (level > k) and with those
// entering too that precede it (smaller mask index: each such pair once). Two neighbours with the same parent are in
// the same tree already. GPUs: one work-item per (entering voxel, neighbour), the K items of a voxel adjacent (its
// neighbour row read in one piece; many short unions hide latency better than few loops of K). CPUs (PER_VOXEL): one
// work-item per entering voxel, looping over its neighbours and starting each union from the tree it has reached.
__kernel void tfce_merge(__global const int* restrict order, __global const int* restrict level,
                         __global const int* restrict nbr, const int voxels, __global const int* restrict start,
                         const int k, volatile __global int* label) {
  const int b = get_global_id(1);
  const int item = get_global_id(0);
#ifdef PER_VOXEL
  const int p = start[(size_t)(k + 1) * MB + b] + item;
#else
  const int p = start[(size_t)(k + 1) * MB + b] + item / K;
#endif
  if (p >= start[(size_t)k * MB + b]) return;
  const size_t row = (size_t)b * voxels;
  volatile __global int* l = label + row;
  const int v = order[row + p];
#ifdef PER_VOXEL
  int tree = v;  // a node of v's tree
  for (int j = 0; j < K; ++j) {
    const int n = nbr[(size_t)v * K + j];
    if (n < 0) continue;
    const int ln = level[row + n];
    if ((ln > k || (ln == k && n < v)) && l[n] != tree) tree = unite(l, tree, n);
  }
#else
  const int n = nbr[(size_t)v * K + item % K];
  if (n < 0) return;
  const int ln = level[row + n];
  if ((ln > k || (ln == k && n < v)) && l[n] != l[v]) unite(l, v, n);
#endif
}

inline int root_of(__global const int* label, int x) {
  int parent = label[x];
  while (parent != x) {
    x = parent;
    parent = label[x];
  }
  return x;
}

// At threshold k, after merge: the extents of the clusters at h_k. An entering voxel adds one to its root; a voxel
// that was a root above (size != 0) but got linked now hands its extent to its new root. Roots do not change here.
__kernel void tfce_count(__global const int* restrict order, const int voxels, __global const int* restrict start,
                         const int k, __global const int* label, __global uint* size) {
  const int b = get_global_id(1);
  const int p = get_global_id(0);
  if (p >= start[(size_t)k * MB + b]) return;
  const size_t row = (size_t)b * voxels;
  __global const int* l = label + row;
  const int v = order[row + p];
  if (p >= start[(size_t)(k + 1) * MB + b]) {
    atomic_inc(&size[row + root_of(l, v)]);
  } else {
    const uint s = size[row + v];
    if (s != 0 && l[v] != v) {
      size[row + v] = 0;
      atomic_add(&size[row + root_of(l, v)], s);
    }
  }
}

// At threshold k, after count: every active voxel adds extent^E * weight (weight = h_k^H * dh, from the host) and
// points straight at its root (others may shorten the same path meanwhile: every label read is an ancestor).
__kernel void tfce_accumulate(__global const int* restrict order, const int voxels, __global const int* restrict start,
                              const int k, const float weight, __global const float* restrict extent_power,
                              __global int* label, __global const uint* restrict size, __global float* restrict acc) {
  const int b = get_global_id(1);
  const int p = get_global_id(0);
  if (p >= start[(size_t)k * MB + b]) return;
  const size_t row = (size_t)b * voxels;
  __global int* l = label + row;
  const int v = order[row + p];
  const int root = root_of(l, v);
  if (l[v] != root) l[v] = root;
  acc[row + p] += extent_power[size[row + root]] * weight;
}

// Each work-group's largest TFCE over the listed positions (all >= 0; positions past a map's list count as 0).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void tfce_group_max(__global const float* restrict acc,
                                                                             const int voxels,
                                                                             __global const int* restrict start,
                                                                             __global float* restrict part_max) {
  __local float lm[WG];
  const int p = get_global_id(0);
  const int lid = get_local_id(0);
  const int b = get_global_id(1);
  lm[lid] = p < start[MB + b] ? acc[(size_t)b * voxels + p] : 0.0f;
  for (int span = WG / 2; span > 0; span /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < span) lm[lid] = fmax(lm[lid], lm[lid + span]);
  }
  if (lid == 0) part_max[(size_t)b * get_num_groups(0) + get_group_id(0)] = lm[0];
}

// One work-group per map: the largest of its `groups` partial maxima.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void tfce_map_max(__global const float* restrict part_max,
                                                                           const int groups,
                                                                           __global float* restrict result) {
  __local float lm[WG];
  const int b = get_group_id(0);
  const int lid = get_local_id(0);
  float m = 0.0f;
  for (int g = lid; g < groups; g += WG) m = fmax(m, part_max[(size_t)b * groups + g]);
  lm[lid] = m;
  for (int span = WG / 2; span > 0; span /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < span) lm[lid] = fmax(lm[lid], lm[lid + span]);
  }
  if (lid == 0) result[b] = lm[0];
}
