// Temporal outliers per volume, AFNI 3dToutcount's rule (polort 0): for each masked voxel, the median `med` and the
// MAD (median of |x - med|) of its series; a value is an outlier when |x - med| > scale * MAD, scale = alpha *
// sqrt(pi/2), alpha = qginv(0.001 / N) (the host computes it). One work-item per masked voxel: it copies its series
// into its own row of `scratch`, finds the two medians by quickselect there, then counts its outliers with atomics.
//
// Memory layout: `volumes` holds `slots` volumes of `voxels` floats each, slot s at s * voxels (a device ring, or a
// whole run in order); `masked` lists the mask's voxel indices, of which this launch examines `count` from `first` on
// (a chunk); `scratch` has one row of `slots` floats per examined voxel (count * slots); `outliers` one int per slot,
// incremented for each listed voxel that is an outlier there, only at slot `flag_slot` when it is >= 0 (the live newest
// volume), else at every slot. A voxel whose series holds a non-finite value, or whose MAD is 0 (a constant voxel), is
// never an outlier. NDRange: 1D, global >= count.

// The k-th smallest of a[0..n) (0-based), by quickselect (Hoare partition about the middle element); reorders a.
float select_kth(__global float* a, int n, int k) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const float pivot = a[lo + (hi - lo) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot) ++i;
      while (a[j] > pivot) --j;
      if (i <= j) {
        const float t = a[i];
        a[i] = a[j];
        a[j] = t;
        ++i;
        --j;
      }
    }
    if (k <= j) {
      hi = j;
    } else if (k >= i) {
      lo = i;
    } else {
      break;  // j < k < i: a[k] equals the pivot and is in place
    }
  }
  return a[k];
}

// The median of a[0..n): the middle value, or the mean of the two middle values for even n (numpy's, AFNI's).
float median_of(__global float* a, int n) {
  const int k = (n - 1) / 2;
  const float lower = select_kth(a, n, k);
  if ((n & 1) != 0) return lower;
  float upper = a[k + 1];  // after the selection a[k+1..n) >= a[k]: the next order statistic is their minimum
  for (int i = k + 2; i < n; ++i) upper = fmin(upper, a[i]);
  return 0.5f * (lower + upper);
}

// Voxel v's series over the `slots` volumes into `row`; false where a value is not finite.
bool load_series(__global const float* restrict volumes, const int slots, const int voxels, const long v,
                 __global float* restrict row) {
  for (int s = 0; s < slots; ++s) {
    const float x = volumes[(long)s * voxels + v];
    if (!isfinite(x)) return false;
    row[s] = x;
  }
  return true;
}

__kernel void count_outliers(__global const float* restrict volumes, const int slots, const int voxels,
                             __global const int* restrict masked, const int first, const int count,
                             __global float* restrict scratch, __global int* restrict outliers, const float scale,
                             const int flag_slot) {
  const int m = get_global_id(0);
  if (m >= count) return;
  const long v = masked[first + m];
  __global float* row = scratch + (long)m * slots;
  if (!load_series(volumes, slots, voxels, v, row)) return;
  const float med = median_of(row, slots);
  for (int s = 0; s < slots; ++s) row[s] = fabs(volumes[(long)s * voxels + v] - med);
  const float mad = median_of(row, slots);
  if (!(mad > 0.0f)) return;
  const float limit = scale * mad;
  if (flag_slot >= 0) {
    if (fabs(volumes[(long)flag_slot * voxels + v] - med) > limit) atomic_inc(&outliers[flag_slot]);
    return;
  }
  for (int s = 0; s < slots; ++s) {
    if (fabs(volumes[(long)s * voxels + v] - med) > limit) atomic_inc(&outliers[s]);
  }
}

// Each examined voxel's median over the `slots` volumes into `medians` (one volume; voxels not examined are left as
// they are; NaN where the series holds a non-finite value): the reference volume of 3dTqual's quality index.
__kernel void series_medians(__global const float* restrict volumes, const int slots, const int voxels,
                             __global const int* restrict masked, const int first, const int count,
                             __global float* restrict scratch, __global float* restrict medians) {
  const int m = get_global_id(0);
  if (m >= count) return;
  const long v = masked[first + m];
  __global float* row = scratch + (long)m * slots;
  medians[v] = load_series(volumes, slots, voxels, v, row) ? median_of(row, slots) : NAN;
}
