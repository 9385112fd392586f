// Spearman's rank correlation of a volume with a reference volume over a mask (AFNI 3dTqual's quality index is 1 minus
// it, the reference being the voxel-wise median volume), exactly: average ranks as integers and integer sums.
//
// Memory layout: `volume` one volume (floats, x fastest); `masked` the `count` mask voxel indices; `values` `count`
// floats (the volume's masked values); `sorted` `padded` floats (a power of two >= count; values, then +inf);
// `ranks` `count` ints: each value's doubled, centred average rank, 2 r - (count + 1) with r its 1-based rank and tied
// values given the mean of their ranks (an integer once doubled); `partials` 3 longs per work-group: the sums of
// a*b, a*a and b*b of two rank lists. NDRange: 1D; `rank_sums` global = groups * LOCAL_SIZE, local = LOCAL_SIZE
// (a power of two, a define); the others global >= their item count, any local size.
//
// gather_masked: values[m] = volume[masked[m]], sorted[m] the same, sorted[count..padded) = +inf; `bad` set to 1
//                where a value is not finite (the host then reports the index as undefined).
// bitonic_step:  one (k, j) step of a bitonic sort of `sorted` ascending (log2(padded) (log2(padded) + 1) / 2 steps).
// average_ranks: the doubled centred rank of values[m] from the first and last places of its value in `sorted`.
// rank_sums:     the group's sums of a[m] b[m], a[m]^2, b[m]^2 (64-bit: |a|, |b| < count, so no sum overflows below
//                ~3e9 voxels).

__kernel void gather_masked(__global const float* restrict volume, __global const int* restrict masked, const int count,
                            const int padded, __global float* restrict values, __global float* restrict sorted,
                            __global int* restrict bad) {
  const int m = get_global_id(0);
  if (m >= padded) return;
  if (m >= count) {
    sorted[m] = INFINITY;
    return;
  }
  const float x = volume[masked[m]];
  if (!isfinite(x)) bad[0] = 1;
  values[m] = x;
  sorted[m] = x;
}

__kernel void bitonic_step(__global float* restrict sorted, const int padded, const int k, const int j) {
  const int i = get_global_id(0);
  const int partner = i ^ j;
  if (i >= padded || partner <= i) return;
  const float a = sorted[i], b = sorted[partner];
  const bool ascending = (i & k) == 0;
  if (ascending ? a > b : a < b) {
    sorted[i] = b;
    sorted[partner] = a;
  }
}

__kernel void average_ranks(__global const float* restrict values, __global const float* restrict sorted,
                            const int count, __global int* restrict ranks) {
  const int m = get_global_id(0);
  if (m >= count) return;
  const float x = values[m];
  int lo = 0, hi = count;  // lower bound: the first place not < x
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (sorted[mid] < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  const int first = lo;
  hi = count;  // upper bound: the first place > x
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (sorted[mid] <= x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  // Places first .. lo - 1 (0-based) hold x: 1-based ranks first + 1 .. lo, their mean (first + 1 + lo) / 2; doubled
  // and centred on (count + 1) / 2: first + lo - count.
  ranks[m] = first + lo - count;
}

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void rank_sums(__global const int* restrict a,
                                                                                __global const int* restrict b,
                                                                                const int count,
                                                                                __global long* restrict partials) {
  __local long ab[LOCAL_SIZE], aa[LOCAL_SIZE], bb[LOCAL_SIZE];
  const int lid = get_local_id(0);
  long s_ab = 0, s_aa = 0, s_bb = 0;
  for (int m = get_global_id(0); m < count; m += get_global_size(0)) {
    const long x = a[m], y = b[m];
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
    partials[3 * get_group_id(0)] = ab[0];
    partials[3 * get_group_id(0) + 1] = aa[0];
    partials[3 * get_group_id(0) + 2] = bb[0];
  }
}
