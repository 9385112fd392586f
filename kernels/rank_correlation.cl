// Spearman's rank correlation of volumes with a reference volume over a mask (AFNI 3dTqual's quality index is 1 minus
// it, the reference being the voxel-wise median volume), exactly: average ranks as integers and integer sums. Several
// volumes at once: dimension 1 of the NDRange is the row (one volume per row).
//
// The sort: tiles of TILE keys sorted in local memory (one launch), then runs merged `ways` at a time (one launch per
// pass: each key's place is its place in its run plus the other runs' keys before it, found by binary search); then
// each value's first and last place in the sorted row give its average rank. 2 + log_ways(tiles) launches a batch (the
// reference's ranks: average_ranks).
//
// Memory layout: `volumes` holds volumes of `voxels` floats (x fastest), row r taking volume `first` + r; `masked` the
// `count` mask voxel indices; per row, `keys` `count` uints (the masked values' float_sort_key), `tiles` and its
// ping-pong twin `total` = tile_count * TILE uints (the keys sorted in runs, padded past `count` with 0xFFFFFFFF,
// which sorts after every finite value's key), `ranks` `count` ints: each value's doubled, centred average rank,
// 2 r - (count + 1) with r its 1-based rank and tied values given the mean of their ranks (an integer once doubled);
// `bad` one int per row (set to 1 where a value is not finite); `partials` [row][group][4] longs: the sums of a*b, a*a
// and b*b of the row's ranks a and the reference's b (one row, shared), and the row's non-finite values.
// NDRange: 2D, dimension 1 = rows; `sort_tiles` dimension 0 tile_count * LOCAL_SIZE, local (LOCAL_SIZE, 1) (LOCAL_SIZE
// and TILE powers of two, defines); `rank_sums` local (LOCAL_SIZE, 1); the others >= their item count.
//
// sort_tiles:    a tile's masked values gathered (their keys into `keys`), sorted (bitonic network in local memory,
//                the work-group's items sharing each step's compare-exchanges) into `tiles`.
// merge_runs:    runs of `run` keys merged `ways` at a time into runs of ways * run (ties: earlier runs' keys first).
// average_ranks: the doubled centred rank of keys[m] from the first and last places of its key in the sorted row.
// rank_sums:     one work-item a value: its rank a as average_ranks finds it, and per work-group the sums of a[m] b[m],
//                a[m]^2, b[m]^2 (64-bit: |a|, |b| < count, so no sum overflows below ~3e9 voxels) and the count of
//                non-finite values.
// sorted_middle: one work-item: of one sorted row's first `count` keys, the finite values' two middle ones (the same
//                one for an odd number) and how many are finite, into `middle` (3 ints: the floats' bits, the count):
//                non-finite keys sort before (-inf, NaN with the sign bit) and after (+inf, NaN) every finite one.

#include "sort_key.clh"

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void sort_tiles(
    __global const float* restrict volumes, const int voxels, const int first, __global const int* restrict masked,
    const int count, __global uint* restrict keys, __global uint* restrict tiles, __global int* restrict bad) {
  __local uint tile[TILE];
  const int lid = get_local_id(0);
  const long row = get_global_id(1);
  const int base = get_group_id(0) * TILE;
  for (int e = lid; e < TILE; e += LOCAL_SIZE) {
    uint key = 0xFFFFFFFFu;
    if (base + e < count) {
      const float x = volumes[(first + row) * voxels + masked[base + e]];
      if (!isfinite(x)) bad[row] = 1;
      key = float_sort_key(x);
      keys[row * count + base + e] = key;
    }
    tile[e] = key;
  }
  for (int k = 2; k <= TILE; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int q = lid; q < TILE / 2; q += LOCAL_SIZE) {
        const int i = ((q & ~(j - 1)) << 1) | (q & (j - 1));  // the lower element of compare-exchange q
        const uint a = tile[i], b = tile[i + j];
        if ((i & k) == 0 ? a > b : a < b) {
          tile[i] = b;
          tile[i + j] = a;
        }
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  __global uint* out = tiles + (row * get_num_groups(0) + get_group_id(0)) * TILE;
  for (int e = lid; e < TILE; e += LOCAL_SIZE) out[e] = tile[e];
}

// The first place in sorted[from .. to) whose key is not below x (strict), or above x (!strict).
int bound(__global const uint* restrict sorted, int from, int to, const uint x, const bool strict) {
  while (from < to) {
    const int mid = from + (to - from) / 2;
    const uint y = sorted[mid];
    if (strict ? y < x : y <= x) {
      from = mid + 1;
    } else {
      to = mid;
    }
  }
  return from;
}

__kernel void merge_runs(__global const uint* restrict in, __global uint* restrict out, const int total, const int run,
                         const int ways) {
  const int i = get_global_id(0);
  if (i >= total) return;
  const long row = get_global_id(1);
  __global const uint* keys = in + row * total;
  const uint x = keys[i];
  const long span = (long)ways * run;
  const int base = (int)((i / span) * span);  // the group of `ways` runs i is in: [base + h run, base + (h + 1) run)
  const int own = (i - base) / run;
  int place = i - own * run;  // its place in its own run, then after the other runs' keys that come first
  for (int h = 0; h < ways; ++h) {
    if (h == own) continue;
    const int from = (int)min((long)base + (long)h * run, (long)total);
    const int to = (int)min((long)from + run, (long)total);
    if (from < to) place += bound(keys, from, to, x, h > own) - from;  // earlier runs: keys at or below x; later: below
  }
  out[row * total + place] = x;
}

__kernel void average_ranks(__global const uint* restrict keys, __global const uint* restrict sorted, const int count,
                            const int total, __global int* restrict ranks) {
  const int m = get_global_id(0);
  if (m >= count) return;
  const long row = get_global_id(1);
  const uint x = keys[row * count + m];
  __global const uint* row_sorted = sorted + row * total;
  // Places first .. last - 1 (0-based) hold x: 1-based ranks first + 1 .. last, their mean (first + 1 + last) / 2;
  // doubled and centred on (count + 1) / 2: first + last - count.
  ranks[row * count + m] = bound(row_sorted, 0, count, x, true) + bound(row_sorted, 0, count, x, false) - count;
}

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void rank_sums(__global const uint* restrict keys,
                                                                                __global const uint* restrict sorted,
                                                                                const int count, const int total,
                                                                                __global const int* restrict b,
                                                                                __global long* restrict partials) {
  __local long ab[LOCAL_SIZE], aa[LOCAL_SIZE], bb[LOCAL_SIZE], bad[LOCAL_SIZE];
  const int lid = get_local_id(0);
  const int m = get_global_id(0);
  const long row = get_global_id(1);
  long s_ab = 0, s_aa = 0, s_bb = 0, s_bad = 0;
  if (m < count) {
    const uint x = keys[row * count + m];
    __global const uint* row_sorted = sorted + row * total;
    const long a = bound(row_sorted, 0, count, x, true) + bound(row_sorted, 0, count, x, false) - count;
    const long y = b[m];
    s_ab = a * y;
    s_aa = a * a;
    s_bb = y * y;
    s_bad = x <= 0x007FFFFFu || x >= 0xFF800000u ? 1 : 0;  // -inf, +inf or NaN (float_sort_key)
  }
  ab[lid] = s_ab;
  aa[lid] = s_aa;
  bb[lid] = s_bb;
  bad[lid] = s_bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) {
      ab[lid] += ab[lid + s];
      aa[lid] += aa[lid + s];
      bb[lid] += bb[lid + s];
      bad[lid] += bad[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    __global long* out = partials + 4 * (row * get_num_groups(0) + get_group_id(0));
    out[0] = ab[0];
    out[1] = aa[0];
    out[2] = bb[0];
    out[3] = bad[0];
  }
}

__kernel void sorted_middle(__global const uint* restrict sorted, const int count, __global int* restrict middle) {
  if (get_global_id(0) != 0) return;
  const int lower = bound(sorted, 0, count, 0x007FFFFFu, false);     // after -inf and NaNs with the sign bit
  const int upper = bound(sorted, lower, count, 0xFF800000u, true);  // before +inf and NaNs
  const int n = upper - lower;
  middle[0] = n > 0 ? as_int(float_of_sort_key(sorted[lower + (n - 1) / 2])) : 0;
  middle[1] = n > 0 ? as_int(float_of_sort_key(sorted[lower + n / 2])) : 0;
  middle[2] = n;
}
