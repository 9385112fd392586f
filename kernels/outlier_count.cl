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

// The k-th smallest of a[0..n) (0-based; element i at a[i * stride]), by quickselect (Hoare partition about the
// middle element); reorders a. And the median of a[0..n): the middle value, or the mean of the two middle values for
// even n (numpy's, AFNI's). Defined for a global row (stride 1) and for a local one (interleaved with the work-group's
// other rows: stride = the work-group size, so that work-items reading the same index touch different banks).
#define DEFINE_SELECTION(SPACE, SUFFIX)                                                    \
  float select_kth_##SUFFIX(SPACE float* a, const int stride, int n, int k) {              \
    int lo = 0, hi = n - 1;                                                                \
    while (lo < hi) {                                                                      \
      const float pivot = a[(lo + (hi - lo) / 2) * stride];                                \
      int i = lo, j = hi;                                                                  \
      while (i <= j) {                                                                     \
        while (a[i * stride] < pivot) ++i;                                                 \
        while (a[j * stride] > pivot) --j;                                                 \
        if (i <= j) {                                                                      \
          const float t = a[i * stride];                                                   \
          a[i * stride] = a[j * stride];                                                   \
          a[j * stride] = t;                                                               \
          ++i;                                                                             \
          --j;                                                                             \
        }                                                                                  \
      }                                                                                    \
      if (k <= j) {                                                                        \
        hi = j;                                                                            \
      } else if (k >= i) {                                                                 \
        lo = i;                                                                            \
      } else {                                                                             \
        break; /* j < k < i: a[k] equals the pivot and is in place */                      \
      }                                                                                    \
    }                                                                                      \
    return a[k * stride];                                                                  \
  }                                                                                        \
  float median_of_##SUFFIX(SPACE float* a, const int stride, int n) {                      \
    const int k = (n - 1) / 2;                                                             \
    const float lower = select_kth_##SUFFIX(a, stride, n, k);                              \
    if ((n & 1) != 0) return lower;                                                        \
    /* after the selection a[k+1..n) >= a[k]: the next order statistic is their minimum */ \
    float upper = a[(k + 1) * stride];                                                     \
    for (int i = k + 2; i < n; ++i) upper = fmin(upper, a[i * stride]);                    \
    return 0.5f * (lower + upper);                                                         \
  }

DEFINE_SELECTION(__global, global)
DEFINE_SELECTION(__local, local)

float median_of(__global float* a, int n) {
  return median_of_global(a, 1, n);
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

// The outliers of voxel v's series about `med` with its MAD `mad`: at `flag_slot` only when it is >= 0, else at every
// slot (a MAD of 0: none).
void count_voxel(__global const float* restrict volumes, const int slots, const int voxels, const long v,
                 const float med, const float mad, const float scale, const int flag_slot,
                 __global int* restrict outliers) {
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
  count_voxel(volumes, slots, voxels, v, med, median_of(row, slots), scale, flag_slot, outliers);
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

#ifdef MAX_SLOTS
// count_outliers with each voxel's series in local memory instead of its scratch row (the live stage's ring: at most
// MAX_SLOTS volumes): LOCAL_ROWS voxels per work-group, their rows interleaved (value s of the work-group's voxel r at
// s * LOCAL_ROWS + r). The loads from `volumes` are coalesced (neighbouring work-items, neighbouring voxels); the
// quickselects run in local memory. The same arithmetic as count_outliers, so the same counts.
// NDRange: 1D, global >= count rounded up to LOCAL_ROWS, local (LOCAL_ROWS).
// Voxel v's series into its interleaved local row; false where a value is not finite.
bool load_series_local(__global const float* restrict volumes, const int slots, const int voxels, const long v,
                       __local float* row) {
  for (int s = 0; s < slots; ++s) {
    const float x = volumes[(long)s * voxels + v];
    if (!isfinite(x)) return false;
    row[s * LOCAL_ROWS] = x;
  }
  return true;
}

__kernel __attribute__((reqd_work_group_size(LOCAL_ROWS, 1, 1))) void count_outliers_local(
    __global const float* restrict volumes, const int slots, const int voxels, __global const int* restrict masked,
    const int first, const int count, __global int* restrict outliers, const float scale, const int flag_slot) {
  __local float rows[LOCAL_ROWS * MAX_SLOTS];
  const int m = get_global_id(0);
  if (m >= count) return;
  const long v = masked[first + m];
  __local float* row = rows + get_local_id(0);
  if (!load_series_local(volumes, slots, voxels, v, row)) return;
  const float med = median_of_local(row, LOCAL_ROWS, slots);
  for (int s = 0; s < slots; ++s) row[s * LOCAL_ROWS] = fabs(volumes[(long)s * voxels + v] - med);
  count_voxel(volumes, slots, voxels, v, med, median_of_local(row, LOCAL_ROWS, slots), scale, flag_slot, outliers);
}

// series_medians with the series in local memory (as count_outliers_local).
__kernel __attribute__((reqd_work_group_size(LOCAL_ROWS, 1, 1))) void series_medians_local(
    __global const float* restrict volumes, const int slots, const int voxels, __global const int* restrict masked,
    const int first, const int count, __global float* restrict medians) {
  __local float rows[LOCAL_ROWS * MAX_SLOTS];
  const int m = get_global_id(0);
  if (m >= count) return;
  const long v = masked[first + m];
  __local float* row = rows + get_local_id(0);
  medians[v] = load_series_local(volumes, slots, voxels, v, row) ? median_of_local(row, LOCAL_ROWS, slots) : NAN;
}
#endif
