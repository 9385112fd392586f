// The decoders' features of one run (core/decoding/sample_features.cpp, docs/algorithms/decoding.md): every feature's
// detrended series z-scored over the run's volumes (mean 0, standard deviation 1 with the 1/T convention, in double),
// the rows of the volumes that are samples written into the sample matrix. A feature constant over the run (flagged
// by the host from the raw series) is 0 in every row.
//
// Memory layout:
//   series    float [T][P]: the run's detrended series, volume-major (T volumes of P features)
//   rows      int   [T]: the sample row that volume t fills, or -1 when it is not a sample
//   fixed     uchar [P]: 1 where the raw series is constant over the run
//   x         float [N][P]: out: the sample rows of this run (the other rows untouched)
// Compile-time defines: T, P, ZSCORE (1: z-score; 0: copy the detrended values).
// NDRange: 1D, global = P (one work-item per feature; reads and writes coalesced across features).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void decoding_features(__global const float* restrict series, __global const int* restrict rows,
                                __global const uchar* restrict fixed, __global float* restrict x) {
  const int f = get_global_id(0);
  if (f >= P) return;
  double mean = 0.0, scale = 1.0;
#if ZSCORE
  for (int t = 0; t < T; ++t) mean += (double)series[(size_t)t * P + f];
  mean /= (double)T;
  double squares = 0.0;
  for (int t = 0; t < T; ++t) {
    const double d = (double)series[(size_t)t * P + f] - mean;
    squares += d * d;
  }
  const double sd = sqrt(squares / (double)T);
  scale = sd > 0.0 ? 1.0 / sd : 0.0;
#endif
  if (fixed[f]) scale = 0.0;
  for (int t = 0; t < T; ++t) {
    const int row = rows[t];
    if (row >= 0) x[(size_t)row * P + f] = (float)(((double)series[(size_t)t * P + f] - mean) * scale);
  }
}
