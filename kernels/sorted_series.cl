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
// (the voxel is then left out, as by count_outliers); `outliers` two ints: a launch counts into outliers[parity] and
// clears outliers[1 - parity] for the next launch (the host alternates the parity: no fill command a TR). The host
// knows `held` and whether the slot was already held (every voxel's series takes the same volumes). NDRange: 1D, global
// >= count, any local size.
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
                                    const int count_outliers, const float scale, __global int* restrict outliers,
                                    const int parity) {
  const int m = get_global_id(0);
  if (m == 0) outliers[1 - parity] = 0;
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
  if (mm.y > 0.0f && fabs(x - mm.x) > scale * mm.y) atomic_inc(outliers + parity);
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

// sorted_series_replace_shared: sorted_series_replace with SERIES_LANES work-items to a row (a define, default 8: the
// row's loads coalesced, four floats a load, its moved entries written at once), ROWS = local size / SERIES_LANES rows
// a work-group. `scratch`: ROWS * local_stride floats of local memory (each row as it was, `local_stride` >= capacity
// floats apart: a multiple of 4 that is not of 8, so that the rows of a warp probing the same place hit different
// banks; the row after the move is read through `moved_entry`). After the one barrier every work-item of a row finds
// the same places by binary search in the local row (the old value's entry, the new value's place), as cheap for the
// row's work-items together as for one, and no further barrier is needed. Every entry ends where sorted_series_replace
// puts it: a gap moved down stops above the entries not greater than the new value, moved up below the entries not
// smaller. The MAD is the middle of the two ascending runs of deviations (entries at and below the middle, read
// downwards, and those above it), found in O(log capacity) (middle_deviations).
#ifndef SERIES_LANES
#define SERIES_LANES 8
#endif

// The first place in row[from .. to) whose value is not below x (strict), or above x (!strict).
int local_bound(__local const float* row, int from, int to, const float x, const bool strict) {
  while (from < to) {
    const int mid = from + (to - from) / 2;
    const float y = row[mid];
    if (strict ? y < x : y <= x) {
      from = mid + 1;
    } else {
      to = mid;
    }
  }
  return from;
}

// Entry e of the row after the move, read off the row as it was (`old_row`): the new value `key` went to place p, the
// entries between p and the gap j moved one place towards the gap.
typedef struct {
  __local const float* old_row;
  int p, j, from, to;
  float key;
} MovedRow;

float moved_entry(const MovedRow* mr, const int e) {
  if (e < mr->from || e > mr->to) return mr->old_row[e];
  if (e == mr->p) return mr->key;
  return mr->p < mr->j ? mr->old_row[e - 1] : mr->old_row[e + 1];
}

// The deviations |entry - med| of ranks k and k + 1 (0-based) among all n: the k + 1 smallest deviations are the first
// i of the lower run (row[k], row[k-1], ..., row[0], ascending deviations) and the first k + 1 - i of the upper run
// (row[k+1], ..., row[n-1]), i found by binary search (the k-th smallest of two sorted runs, O(log n)); rank k is the
// larger of the two runs' last taken, rank k + 1 the smaller of their next.
float2 middle_deviations(const MovedRow* row, const int n, const int k, const float med) {
  const int a = k + 1, b = n - k - 1;  // the runs' lengths
  int lo = max(0, k + 1 - b), hi = a;
  while (lo < hi) {  // the fewest i with upper[k - i] <= lower[i] (or a run used up)
    const int i = lo + (hi - lo) / 2;
    const int j = k + 1 - i;
    const float lower_i = fabs(moved_entry(row, k - i) - med);
    const float upper_before = fabs(moved_entry(row, k + j) - med);  // upper[j - 1]
    if (j > 0 && i < a && upper_before > lower_i) {
      lo = i + 1;
    } else {
      hi = i;
    }
  }
  const int i = lo, j = k + 1 - i;
  const float last_lower = i > 0 ? fabs(moved_entry(row, k - i + 1) - med) : 0.0f;
  const float last_upper = j > 0 ? fabs(moved_entry(row, k + j) - med) : 0.0f;
  const float next_lower = i < a ? fabs(moved_entry(row, k - i) - med) : INFINITY;
  const float next_upper = j < b ? fabs(moved_entry(row, k + 1 + j) - med) : INFINITY;
  return (float2)(fmax(last_lower, last_upper), fmin(next_lower, next_upper));
}

__kernel void sorted_series_replace_shared(__global const float* restrict volumes, const int voxels, const int slot,
                                           __global const int* restrict masked, const int count, const int capacity,
                                           const int held, const int slot_was_held, __global float* restrict values,
                                           __global float* restrict ordered, __global int* restrict nonfinite,
                                           const int count_outliers, const float scale, __global int* restrict outliers,
                                           const int parity, __local float* restrict scratch, const int local_stride) {
  const int lane = get_local_id(0) % SERIES_LANES;
  const int r = get_local_id(0) / SERIES_LANES;
  const int rows = get_local_size(0) / SERIES_LANES;
  const int m = get_group_id(0) * rows + r;
  const bool active = m < count;
  if (get_global_id(0) == 0) outliers[1 - parity] = 0;
  __local float* old_row = scratch + r * local_stride;
  __global float* row = values + (long)(active ? m : 0) * capacity;
  if (active) {
    const int quads = held / 4;
    for (int q = lane; q < quads; q += SERIES_LANES) vstore4(vload4(q, row), q, old_row);
    for (int e = 4 * quads + lane; e < held; e += SERIES_LANES) old_row[e] = row[e];
  }
  // Every work-item of the row reads the new and the old value (the same addresses: one load for the row).
  const float x = active ? volumes[(long)slot * voxels + masked[m]] : 0.0f;
  const float key = isfinite(x) ? x : INFINITY;
  __global float* previous = ordered + (long)slot * count + (active ? m : 0);
  const float old = active && slot_was_held != 0 ? *previous : INFINITY;
  int bad = active ? nonfinite[m] : 0;
  if (slot_was_held != 0 && !isfinite(old)) --bad;
  if (!isfinite(x)) ++bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!active) return;
  if (lane == 0) {
    *previous = key;
    nonfinite[m] = bad;
  }
  const int n = slot_was_held != 0 ? held : held + 1;  // entries after the move
  // The gap: the old value's entry (the first not below it: it equals it), or a new entry at the end.
  const int j = slot_was_held != 0 ? local_bound(old_row, 0, held, old, true) : held;
  // The new value's place: below the gap before the first entry greater than it, else above the gap before the first
  // entry not smaller than it (the gap itself when neither).
  const int below = local_bound(old_row, 0, j, key, false);
  const int above = below < j ? j : local_bound(old_row, j + 1, held, key, true);
  const int p = below < j ? below : above > j + 1 ? above - 1 : j;
  const int from = min(p, j), to = max(p, j);
  const MovedRow moved = {old_row, p, j, from, to, key};
  for (int e = from + lane; e <= to; e += SERIES_LANES) row[e] = moved_entry(&moved, e);
  if (count_outliers == 0 || bad != 0 || lane != 0) return;
  const int k = (n - 1) / 2;
  const float med =
      (n & 1) != 0 ? moved_entry(&moved, k) : 0.5f * (moved_entry(&moved, k) + moved_entry(&moved, k + 1));
  const float2 mad_pair = middle_deviations(&moved, n, k, med);
  const float mad = (n & 1) != 0 ? mad_pair.x : 0.5f * (mad_pair.x + mad_pair.y);
  if (mad > 0.0f && fabs(key - med) > scale * mad) atomic_inc(outliers + parity);
}
