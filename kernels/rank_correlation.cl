// Spearman's rank correlation of volumes with a reference volume over a mask (AFNI 3dTqual's quality index is 1 minus
// it, the reference being the voxel-wise median volume), exactly: average ranks as integers and integer sums. Several
// volumes at once: dimension 1 of the NDRange is the row (one volume per row).
//
// Memory layout: `volumes` holds volumes of `voxels` floats (x fastest), row r taking volume `first` + r; `masked` the
// `count` mask voxel indices; per row, `values` `count` floats (the row's masked values), `sorted` `padded` floats (a
// power of two >= count; values, then +inf), `ranks` `count` ints: each value's doubled, centred average rank,
// 2 r - (count + 1) with r its 1-based rank and tied values given the mean of their ranks (an integer once doubled);
// `bad` one int per row (set to 1 where a value is not finite); `partials` [row][group][3] longs: the sums of a*b, a*a
// and b*b of the row's ranks a and the reference's b (one row, shared).
// NDRange: 2D, dimension 1 = rows; `rank_sums` dimension 0 = groups * LOCAL_SIZE, local (LOCAL_SIZE, 1) (a power of
// two, a define); the others dimension 0 >= their item count, any local size.
//
// gather_masked: a row's masked values into `values` and `sorted`, `sorted` padded with +inf.
// bitonic_step:  one (k, j) step of a bitonic sort of each row of `sorted`, ascending (the steps with j >= the local
//                block).
// bitonic_local: every step (k, j) with k_first <= k <= k_last and j < the work-group size (from j_first at k_first,
//                from k / 2 after) in local memory, one block of `get_local_size(0)` (a power of two <= BITONIC_LOCAL)
//                consecutive elements per work-group: the first launch sorts each block (k 2 .. block), then one launch
//                per larger k finishes its steps below the block size. The same compare-exchanges as bitonic_step.
// average_ranks: the doubled centred rank of values[m] from the first and last places of its value in `sorted`.
// rank_sums:     per work-group the sums of a[m] b[m], a[m]^2, b[m]^2 (64-bit: |a|, |b| < count, so no sum overflows
//                below ~3e9 voxels).

__kernel void gather_masked(__global const float* restrict volumes, const int voxels, const int first,
                            __global const int* restrict masked, const int count, const int padded,
                            __global float* restrict values, __global float* restrict sorted,
                            __global int* restrict bad) {
  const int m = get_global_id(0);
  const int row = get_global_id(1);
  if (m >= padded) return;
  __global float* row_sorted = sorted + (long)row * padded;
  if (m >= count) {
    row_sorted[m] = INFINITY;
    return;
  }
  const float x = volumes[(long)(first + row) * voxels + masked[m]];
  if (!isfinite(x)) bad[row] = 1;
  values[(long)row * count + m] = x;
  row_sorted[m] = x;
}

__kernel void bitonic_step(__global float* restrict sorted, const int padded, const int k, const int j) {
  const int i = get_global_id(0);
  const int partner = i ^ j;
  if (i >= padded || partner <= i) return;
  __global float* row = sorted + (long)get_global_id(1) * padded;
  const float a = row[i], b = row[partner];
  const bool ascending = (i & k) == 0;
  if (ascending ? a > b : a < b) {
    row[i] = b;
    row[partner] = a;
  }
}

__kernel void bitonic_local(__global float* restrict sorted, const int padded, const int k_first, const int k_last,
                            const int j_first) {
  __local float block[BITONIC_LOCAL];
  const int lid = get_local_id(0);
  const int i = get_global_id(0);
  __global float* row = sorted + (long)get_global_id(1) * padded;
  block[lid] = row[i];
  for (int k = k_first; k <= k_last; k *= 2) {
    for (int j = k == k_first ? j_first : k / 2; j > 0; j /= 2) {
      barrier(CLK_LOCAL_MEM_FENCE);
      const int partner = lid ^ j;
      if (partner > lid) {
        const float a = block[lid], b = block[partner];
        const bool ascending = (i & k) == 0;
        if (ascending ? a > b : a < b) {
          block[lid] = b;
          block[partner] = a;
        }
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  row[i] = block[lid];
}

__kernel void average_ranks(__global const float* restrict values, __global const float* restrict sorted,
                            const int count, const int padded, __global int* restrict ranks) {
  const int m = get_global_id(0);
  if (m >= count) return;
  const long row = get_global_id(1);
  __global const float* row_sorted = sorted + row * padded;
  const float x = values[row * count + m];
  int lo = 0, hi = count;  // lower bound: the first place not < x
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (row_sorted[mid] < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  const int first = lo;
  hi = count;  // upper bound: the first place > x
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (row_sorted[mid] <= x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  // Places first .. lo - 1 (0-based) hold x: 1-based ranks first + 1 .. lo, their mean (first + 1 + lo) / 2; doubled
  // and centred on (count + 1) / 2: first + lo - count.
  ranks[row * count + m] = first + lo - count;
}

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void rank_sums(__global const int* restrict a,
                                                                                __global const int* restrict b,
                                                                                const int count,
                                                                                __global long* restrict partials) {
  __local long ab[LOCAL_SIZE], aa[LOCAL_SIZE], bb[LOCAL_SIZE];
  const int lid = get_local_id(0);
  const long row = get_global_id(1);
  __global const int* row_a = a + row * count;
  long s_ab = 0, s_aa = 0, s_bb = 0;
  for (int m = get_global_id(0); m < count; m += get_global_size(0)) {
    const long x = row_a[m], y = b[m];
    s_ab += x * y;
    s_aa += x * x;
    s_bb += y * y;
  }
  ab[lid] = s_ab;
  aa[lid] = s_aa;
  bb[lid] = s_bb;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) {
      ab[lid] += ab[lid + s];
      aa[lid] += aa[lid + s];
      bb[lid] += bb[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    __global long* out = partials + 3 * (row * get_num_groups(0) + get_group_id(0));
    out[0] = ab[0];
    out[1] = aa[0];
    out[2] = bb[0];
  }
}
