// Temporal detrending: subtracts each voxel's projection onto NBASIS orthonormal basis columns.
//
// Memory layout: `in`/`out` hold NT volumes, volume-major: index = t * nvox + voxel. They may be the
// same buffer (each work-item reads its own series completely before writing it).
// `q` is [nt][NBASIS] floats (row t holds the basis functions at time t); its columns are orthonormal
// and, unless REMOVE_MEAN, orthogonal to the constant.
// NDRange: 1D, one work-item per voxel (global rounded up; items past nvox return). Pass 1 accumulates
// c_j = sum_t q[t][j] (y[t] - y[0]) with Kahan compensation; pass 2 writes y[t] - sum_j q[t][j] c_j.
// Subtracting y[0] first keeps the float sums small; it cancels exactly for columns orthogonal to the
// constant, and with REMOVE_MEAN (constant column included) the output is taken relative to y[0] too.
// Compile-time defines:
//   NBASIS       number of basis columns to remove (>= 1)
//   REMOVE_MEAN  the constant column is among them: the output has zero mean

__kernel void detrend(__global const float* in, __global float* out, __global const float* restrict q, const int nvox,
                      const int nt) {
  const int v = get_global_id(0);
  if (v >= nvox) return;
  const float pivot = in[v];

  float c[NBASIS];
  float comp[NBASIS];
  for (int j = 0; j < NBASIS; ++j) {
    c[j] = 0.0f;
    comp[j] = 0.0f;
  }
  for (int t = 0; t < nt; ++t) {
    const float d = in[(size_t)t * nvox + v] - pivot;
    __global const float* row = q + (size_t)t * NBASIS;
    for (int j = 0; j < NBASIS; ++j) {
      const float term = row[j] * d - comp[j];
      const float sum = c[j] + term;
      comp[j] = (sum - c[j]) - term;
      c[j] = sum;
    }
  }

  for (int t = 0; t < nt; ++t) {
    const size_t i = (size_t)t * nvox + v;
    __global const float* row = q + (size_t)t * NBASIS;
    float fit = 0.0f;
    for (int j = 0; j < NBASIS; ++j) fit += row[j] * c[j];
#ifdef REMOVE_MEAN
    out[i] = (in[i] - pivot) - fit;
#else
    out[i] = in[i] - fit;
#endif
  }
}
