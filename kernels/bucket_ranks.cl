// The rank sums of Spearman's correlation between one volume and a fixed reference ranking over a mask (the live
// quality index, core/qa/bucket_ranks.hpp), exactly, in two launches instead of a whole sort: the reference's sorted
// keys cut the key range into buckets of about `bucket` reference values each (a sample sort whose splitters come from
// the reference, which a live volume resembles); each value goes to its bucket, and each bucket's work-group ranks its
// values among themselves and adds the number of values in the buckets before it. Equal keys share a bucket (a value's
// bucket is the number of splitters not above it), so every rank is the exact average rank of scipy's rankdata.
//
// Memory layout: `volumes` holds volumes of `voxels` floats (x fastest), `slot` the one ranked; `masked` the `count`
// mask voxel indices; `reference_ranks` `count` ints: the reference's doubled centred average ranks
// (rank_correlation.cl, average_ranks); `sorted_reference` the reference's keys sorted ascending (float_sort_key,
// sort_key.clh); `splitters` `nsplit` = buckets - 1 uints; `counts` two sets of buckets + 1 counters used in turn,
// `stride` ints apart (counters on sectors of their own take the scatter's atomics apart): set p holds each bucket's
// values and, last, the non-finite values the launches of parity p met, the other set is cleared for the next pair (no
// fill command a TR); `storage` buckets * `capacity` uint2: bucket b's values at b * capacity, each its key and its
// reference rank, in no particular order; `partials` 4 longs a bucket (the sums of a*b, a*a and b*b of its values'
// ranks a and reference ranks b; 1 where the bucket overflowed its capacity), then the non-finite count.
// NDRange: 1D, local LOCAL_SIZE (a define, a power of two); bucket_scatter global >= count, bucket_rank_sums global =
// buckets * LOCAL_SIZE (a work-group a bucket), bucket_splitters global >= nsplit. Local memory: `split` nsplit uints
// (at least one), `sorted` the capacity rounded up to a power of two, PER_ITEM * LOCAL_SIZE uints at most (PER_ITEM a
// define: the values a work-item holds in registers).
//
// bucket_splitters: splitters[j] = sorted_reference[(j + 1) * bucket] (once per reference).
// bucket_scatter:   each masked value's key into its bucket (a binary search over the splitters in local memory, then
//                   a slot taken by atomic increment), with its reference rank; non-finite values only counted.
// bucket_rank_sums: per bucket, its keys sorted in local memory (a bitonic network over the count rounded up to a
//                   power of two), each value's first and last place among them by binary search, offset by the
//                   values of the earlier buckets, into the doubled centred average rank 2 offset + first + last -
//                   count, and the work-group's sums; a bucket that overflowed is flagged (the host then ranks the
//                   volume another way) and sums nothing.

#include "sort_key.clh"

#define EMPTY_KEY 0xFFFFFFFFu  // above every finite value's key: pads a bucket's sort to a power of two

__kernel void bucket_splitters(__global const uint* restrict sorted_reference, __global uint* restrict splitters,
                               const int nsplit, const int bucket) {
  const int j = get_global_id(0);
  if (j < nsplit) splitters[j] = sorted_reference[(long)(j + 1) * bucket];
}

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void bucket_scatter(
    __global const float* restrict volumes, const int voxels, const int slot, __global const int* restrict masked,
    const int count, __global const int* restrict reference_ranks, __global const uint* restrict splitters,
    const int nsplit, __global int* restrict counts, const int stride, __global uint2* restrict storage,
    const int capacity, __local uint* restrict split) {
  for (int j = get_local_id(0); j < nsplit; j += LOCAL_SIZE) split[j] = splitters[j];
  barrier(CLK_LOCAL_MEM_FENCE);
  const int m = get_global_id(0);
  if (m >= count) return;
  const float x = volumes[(long)slot * voxels + masked[m]];
  if (!isfinite(x)) {
    atomic_inc(counts + (nsplit + 1) * stride);
    return;
  }
  const uint key = float_sort_key(x);
  int bucket = 0, hi = nsplit;
  while (bucket < hi) {  // the splitters not above the key
    const int mid = bucket + (hi - bucket) / 2;
    if (split[mid] <= key) {
      bucket = mid + 1;
    } else {
      hi = mid;
    }
  }
  const int place = atomic_inc(counts + bucket * stride);
  if (place < capacity) storage[(long)bucket * capacity + place] = (uint2)(key, (uint)reference_ranks[m]);
}

// The first place in sorted[0 .. n) whose key is not below x (strict), or above x (!strict).
int local_key_bound(__local const uint* sorted, int n, const uint x, const bool strict) {
  int from = 0;
  while (from < n) {
    const int mid = from + (n - from) / 2;
    const uint y = sorted[mid];
    if (strict ? y < x : y <= x) {
      from = mid + 1;
    } else {
      n = mid;
    }
  }
  return from;
}

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void bucket_rank_sums(
    __global const int* restrict counts, __global int* restrict next_counts, const int nsplit, const int stride,
    const int count, __global const uint2* restrict storage, const int capacity, __global long* restrict partials,
    __local uint* restrict sorted) {
  __local long sum_ab[LOCAL_SIZE], sum_aa[LOCAL_SIZE], sum_bb[LOCAL_SIZE];
  __local int before[LOCAL_SIZE];
  const int lid = get_local_id(0);
  const int b = get_group_id(0);
  int part = 0;
  for (int j = lid; j < b; j += LOCAL_SIZE) part += counts[j * stride];
  before[lid] = part;
  const int n = counts[b * stride];
  if (lid == 0) {
    next_counts[b * stride] = 0;
    if (b == 0) next_counts[(nsplit + 1) * stride] = 0;
  }
  const bool overflow = n > capacity;  // the same for the whole work-group
  int padded = 1;                      // the sort's length: n rounded up to a power of two
  while (padded < n) padded <<= 1;
  // The work-item's values (keys and reference ranks in registers), and every key (and the padding) into the sort.
  uint mine[PER_ITEM];
  int refs[PER_ITEM];
  if (!overflow) {
#pragma unroll
    for (int i = 0; i < PER_ITEM; ++i) {
      const int e = lid + i * LOCAL_SIZE;
      const uint2 entry = e < n ? storage[(long)b * capacity + e] : (uint2)(EMPTY_KEY, 0u);
      mine[i] = entry.x;
      refs[i] = (int)entry.y;
      if (e < padded) sorted[e] = entry.x;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) before[lid] += before[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const long offset = before[0];
  if (!overflow) {  // a bitonic network over the padded keys, the work-group's items sharing each step
    for (int k = 2; k <= padded; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int q = lid; q < padded / 2; q += LOCAL_SIZE) {
          const int i = ((q & ~(j - 1)) << 1) | (q & (j - 1));  // the lower element of compare-exchange q
          const uint x = sorted[i], y = sorted[i + j];
          if ((i & k) == 0 ? x > y : x < y) {
            sorted[i] = y;
            sorted[i + j] = x;
          }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
      }
    }
  }
  long ab = 0, aa = 0, bb = 0;
  if (!overflow) {
#pragma unroll
    for (int i = 0; i < PER_ITEM; ++i) {
      if (lid + i * LOCAL_SIZE < n) {
        // Places first .. last - 1 of the bucket hold the key: its doubled centred average rank among all count.
        const int first = local_key_bound(sorted, n, mine[i], true), last = local_key_bound(sorted, n, mine[i], false);
        const long a = 2 * offset + first + last - count;
        const long r = refs[i];
        ab += a * r;
        aa += a * a;
        bb += r * r;
      }
    }
  }
  sum_ab[lid] = ab;
  sum_aa[lid] = aa;
  sum_bb[lid] = bb;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = LOCAL_SIZE / 2; s > 0; s >>= 1) {
    if (lid < s) {
      sum_ab[lid] += sum_ab[lid + s];
      sum_aa[lid] += sum_aa[lid + s];
      sum_bb[lid] += sum_bb[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    __global long* out = partials + 4 * (long)b;
    out[0] = sum_ab[0];
    out[1] = sum_aa[0];
    out[2] = sum_bb[0];
    out[3] = overflow ? 1 : 0;
    if (b == 0) partials[4 * (nsplit + 1)] = counts[(nsplit + 1) * stride];
  }
}
