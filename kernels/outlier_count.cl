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

#ifdef SORTED_SLOTS
// count_outliers and series_medians with each voxel's series sorted in local memory instead of selected in a scratch
// row (the live stage's ring: at most SORTED_SLOTS volumes, a power of two): LOCAL_ROWS voxels per work-group of
// LOCAL_SIZE items, voxel r's series in rows[r * ROW_STRIDE ...], padded with +inf to the next power of two of
// `slots`. The items load the series together (neighbouring items, neighbouring voxels of one volume: coalesced), sort
// every row with a bitonic network in local memory (all items sharing the compare-exchanges: no divergent
// quickselects), then one item per voxel reads the median off its sorted row and the MAD by merging the deviations
// below and above it. The same float arithmetic as count_outliers, so the same medians, MADs and counts.
// NDRange: 1D, global = ceil(count / LOCAL_ROWS) * LOCAL_SIZE, local (LOCAL_SIZE).
#define ROW_STRIDE (SORTED_SLOTS + 1)  // odd: neighbouring rows start in different banks

// Loads the series of the work-group's voxels (masked[first + group * LOCAL_ROWS + r]) and sorts each ascending;
// bad[r] = 1 where voxel r's series holds a non-finite value. Returns how many voxels the work-group has.
int load_and_sort_series(__global const float* restrict volumes, const int slots, const int voxels,
                         __global const int* restrict masked, const int first, const int count, __local float* rows,
                         __local int* bad) {
  const int lid = get_local_id(0);
  const int base = get_group_id(0) * LOCAL_ROWS;
  const int here = min(LOCAL_ROWS, count - base);
  int padded = 1;
  while (padded < slots) padded <<= 1;
  for (int r = lid; r < LOCAL_ROWS; r += LOCAL_SIZE) bad[r] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int e = lid; e < LOCAL_ROWS * padded; e += LOCAL_SIZE) {
    const int s = e / LOCAL_ROWS, r = e % LOCAL_ROWS;
    float x = INFINITY;
    if (s < slots && r < here) {
      x = volumes[(long)s * voxels + masked[first + base + r]];
      if (!isfinite(x)) bad[r] = 1;  // the voxel is left out; its row's order does not matter
    }
    rows[r * ROW_STRIDE + s] = x;
  }
  const int pairs = padded / 2;  // compare-exchanges per row and step (no divisions below: powers of two)
  int pair_bits = 0;
  while ((1 << pair_bits) < pairs) ++pair_bits;
  for (int k = 2; k <= padded; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int p = lid; p < LOCAL_ROWS * pairs; p += LOCAL_SIZE) {
        const int q = p & (pairs - 1);
        const int i = ((q & ~(j - 1)) << 1) | (q & (j - 1));  // the lower element of compare-exchange q
        __local float* row = rows + (p >> pair_bits) * ROW_STRIDE;
        const float a = row[i], b = row[i + j];
        if ((i & k) == 0 ? a > b : a < b) {
          row[i] = b;
          row[i + j] = a;
        }
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  return here;
}

// The median of the sorted row[0..n) (as median_of) and the median of the |x - median| (the MAD): the deviations of
// the values at and below the middle and of those above it are two ascending runs; merging them from the middle out
// gives the deviations in order.
float2 median_and_mad_sorted(__local const float* row, const int n) {
  const int k = (n - 1) / 2;
  const float med = (n & 1) != 0 ? row[k] : 0.5f * (row[k] + row[k + 1]);
  int below = 0, above = 0;  // deviations taken from each run
  float lower = 0.0f, upper = 0.0f;
  for (int t = 0; t <= k + 1 && t < n; ++t) {
    const float d_below = below <= k ? fabs(row[k - below] - med) : INFINITY;
    const float d_above = above < n - 1 - k ? fabs(row[k + 1 + above] - med) : INFINITY;
    float d;
    if (d_below <= d_above) {
      d = d_below;
      ++below;
    } else {
      d = d_above;
      ++above;
    }
    if (t == k) lower = d;
    if (t == k + 1) upper = d;
  }
  return (float2)(med, (n & 1) != 0 ? lower : 0.5f * (lower + upper));
}

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void count_outliers_local(
    __global const float* restrict volumes, const int slots, const int voxels, __global const int* restrict masked,
    const int first, const int count, __global int* restrict outliers, const float scale, const int flag_slot) {
  __local float rows[LOCAL_ROWS * ROW_STRIDE];
  __local int bad[LOCAL_ROWS];
  const int here = load_and_sort_series(volumes, slots, voxels, masked, first, count, rows, bad);
  const int r = get_local_id(0);
  if (r >= here || bad[r] != 0) return;
  const long v = masked[first + get_group_id(0) * LOCAL_ROWS + r];
  const float2 m = median_and_mad_sorted(rows + r * ROW_STRIDE, slots);
  count_voxel(volumes, slots, voxels, v, m.x, m.y, scale, flag_slot, outliers);
}

// series_medians with the series sorted in local memory (as count_outliers_local).
__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void series_medians_local(
    __global const float* restrict volumes, const int slots, const int voxels, __global const int* restrict masked,
    const int first, const int count, __global float* restrict medians) {
  __local float rows[LOCAL_ROWS * ROW_STRIDE];
  __local int bad[LOCAL_ROWS];
  const int here = load_and_sort_series(volumes, slots, voxels, masked, first, count, rows, bad);
  const int r = get_local_id(0);
  if (r >= here) return;
  const long v = masked[first + get_group_id(0) * LOCAL_ROWS + r];
  const int k = (slots - 1) / 2;
  __local const float* row = rows + r * ROW_STRIDE;
  medians[v] = bad[r] != 0 ? NAN : (slots & 1) != 0 ? row[k] : 0.5f * (row[k] + row[k + 1]);
}
#endif
