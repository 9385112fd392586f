// The connectome's node series made ready for correlation on the device (core/connectome/thresholded_correlation.cpp,
// docs/algorithms/connectome.md): one work-group per node ranks its series (Spearman: rank = 1 + #smaller +
// (#equal - 1) / 2, the average rank of ties, by counting over the series in local memory), subtracts the mean and
// divides by the norm, in place; a constant series is marked invalid and zeroed.
//
// Memory layout (N nodes, LP = L rounded up to 16):
//   z      float [N][LP]: in: the raw series (padding 0); out: the normalised series (padding 0)
//   valid  uchar [N]: out: 1, or 0 for a constant series
// Compile-time defines: L, LP, WG (work-group size, a power of two), SPEARMAN (0 or 1).
// NDRange: 1D, global = N * WG, local = WG.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void node_normalise(__global float* restrict z,
                                                                             __global uchar* restrict valid) {
  const size_t node = get_group_id(0);
  const int lid = get_local_id(0);
  __global float* row = z + node * (size_t)LP;
  __local float x[L];
  __local float value[L];
  __local real sums[WG];
  for (int t = lid; t < L; t += WG) x[t] = row[t];
  barrier(CLK_LOCAL_MEM_FENCE);
#if SPEARMAN
  for (int t = lid; t < L; t += WG) {
    int smaller = 0, equal = 0;
    const float v = x[t];
    for (int u = 0; u < L; ++u) {
      smaller += x[u] < v;
      equal += x[u] == v;
    }
    value[t] = 1.0f + (float)smaller + 0.5f * (float)(equal - 1);
  }
#else
  for (int t = lid; t < L; t += WG) value[t] = x[t];
#endif
  // The mean, then the sum of squared deviations: tree reductions in local memory.
  real s = 0;
  for (int t = lid; t < L; t += WG) s += (real)value[t];
  sums[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = WG / 2; k > 0; k >>= 1) {
    if (lid < k) sums[lid] += sums[lid + k];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const real mean = sums[0] / (real)L;
  barrier(CLK_LOCAL_MEM_FENCE);
  s = 0;
  for (int t = lid; t < L; t += WG) {
    const real d = (real)value[t] - mean;
    s += d * d;
  }
  sums[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = WG / 2; k > 0; k >>= 1) {
    if (lid < k) sums[lid] += sums[lid + k];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const real norm = sqrt(sums[0]);
  const int ok = norm > (real)0;
  for (int t = lid; t < L; t += WG) row[t] = ok ? (float)(((real)value[t] - mean) / norm) : 0.0f;
  if (lid == 0) valid[node] = (uchar)ok;
}
