// Each masked voxel's series over the live ring kept sorted on the device: one volume replaces its ring slot's old
// values per TR (an insertion move, O(series) per voxel, instead of sorting or selecting the whole series again), and
// 3dToutcount's outlier test of the new value (polort 0: |x - median| > scale * MAD) and the median volume read off
// the sorted series.
//
// Memory layout: `volumes` holds the ring's slots of `voxels` floats each (slot s at s * voxels); `masked` the `count`
// mask voxel indices; per masked voxel m: `values` row m (`capacity` floats from m * capacity: its own cache lines, as
// a work-item's moves stay within its row) holds its series sorted ascending, non-finite values as +inf, the first
// `held` entries in use; `ordered` the value each ring slot gave it (slot s at s * count + m: neighbouring work-items,
// neighbouring addresses), which the next volume in that slot replaces; `nonfinite` how many entries are not finite
// (the voxel is then left out, as by count_outliers); `outliers` one int. The host knows `held` and whether the slot
// was already held (every voxel's series takes the same volumes). NDRange: 1D, global >= count, any local size.
//
// sorted_series_replace: the slot's new value replaces its old one (found by binary search: any equal entry will do)
//                        or joins the series while the ring fills, and moves to its sorted place; with
//                        `count_outliers`, the voxel adds 1 to `outliers` when the new value is an outlier of its
//                        series (scale from the host).
// sorted_series_medians: each masked voxel's median into `medians` (NaN where a value is not finite or none is held).

// The median of the sorted row[0..n) and the median of their |x - median| (the MAD): the deviations of the entries at
// and below the middle and of those above it are two ascending runs, merged from the middle out.
float2 median_and_mad_of(__global const float* restrict row, const int n) {
  const int k = (n - 1) / 2;
  const float med = (n & 1) != 0 ? row[k] : 0.5f * (row[k] + row[k + 1]);
  int below = 0, above = 0;
  float d_below = fabs(row[k] - med);
  float d_above = n > k + 1 ? fabs(row[k + 1] - med) : INFINITY;
  float lower = 0.0f, upper = 0.0f;
  for (int t = 0; t <= k + 1 && t < n; ++t) {
    float d;
    if (d_below <= d_above) {
      d = d_below;
      ++below;
      d_below = below <= k ? fabs(row[k - below] - med) : INFINITY;
    } else {
      d = d_above;
      ++above;
      d_above = above < n - 1 - k ? fabs(row[k + 1 + above] - med) : INFINITY;
    }
    if (t == k) lower = d;
    if (t == k + 1) upper = d;
  }
  return (float2)(med, (n & 1) != 0 ? lower : 0.5f * (lower + upper));
}

__kernel void sorted_series_replace(__global const float* restrict volumes, const int voxels, const int slot,
                                    __global const int* restrict masked, const int count, const int capacity,
                                    const int held, const int slot_was_held, __global float* restrict values,
                                    __global float* restrict ordered, __global int* restrict nonfinite,
                                    const int count_outliers, const float scale, __global int* restrict outliers) {
  const int m = get_global_id(0);
  if (m >= count) return;
  const float x = volumes[(long)slot * voxels + masked[m]];
  const float key = isfinite(x) ? x : INFINITY;
  __global float* row = values + (long)m * capacity;
  __global float* previous = ordered + (long)slot * count + m;
  int bad = nonfinite[m];
  int n = held, j = held;  // the entry the slot's old value held, or a new one at the end
  if (slot_was_held != 0) {
    const float old = *previous;
    int lo = 0, hi = n;
    while (lo < hi) {  // the first entry not below the old value: it equals it
      const int mid = lo + (hi - lo) / 2;
      if (row[mid] < old) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    j = lo;
    if (!isfinite(old)) --bad;
  } else {
    ++n;
  }
  *previous = key;
  if (!isfinite(x)) ++bad;
  nonfinite[m] = bad;
  while (j > 0 && row[j - 1] > key) {  // move the gap down to the new value's place ...
    row[j] = row[j - 1];
    --j;
  }
  while (j < n - 1 && row[j + 1] < key) {  // ... or up
    row[j] = row[j + 1];
    ++j;
  }
  row[j] = key;
  if (count_outliers == 0 || bad != 0) return;
  const float2 mm = median_and_mad_of(row, n);
  if (mm.y > 0.0f && fabs(x - mm.x) > scale * mm.y) atomic_inc(outliers);
}

__kernel void sorted_series_medians(__global const float* restrict values, __global const int* restrict masked,
                                    const int count, const int capacity, const int held,
                                    __global const int* restrict nonfinite, __global float* restrict medians) {
  const int m = get_global_id(0);
  if (m >= count) return;
  __global const float* row = values + (long)m * capacity;
  const int k = (held - 1) / 2;
  medians[masked[m]] = held == 0 || nonfinite[m] != 0 ? NAN : (held & 1) != 0 ? row[k] : 0.5f * (row[k] + row[k + 1]);
}
