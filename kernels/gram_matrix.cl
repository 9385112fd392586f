// The Gram matrix K = X X^T of the decoders' samples (core/decoding/gram_matrix.cpp, docs/algorithms/decoding.md), in
// two launches. gram_partial: one work-group per TILE x TILE block of K on or above the diagonal and per segment of
// SEG features; each work-item sums one element's products over its segment, both tiles of X staged in local memory.
// The products of two floats are exact in double and summed in double, so K is the double-precision Gram matrix of
// the float features up to the order of the additions. gram_reduce: K[i][j] = the sum over the segments, the lower
// triangle taken from the upper.
//
// Memory layout:
//   x        float  [N][P]: the samples' features, one row per sample
//   partial  double [S][N][N]: segment s's sums; written only in blocks whose column tile >= row tile
//   gram     double [N][N]: out (symmetric)
// Compile-time defines: N, P, SEG (features per segment, a multiple of TILE), TILE (the block side), S (segments).
// NDRange: gram_partial 3D, global = (tiles * TILE, tiles * TILE, S), local = (TILE, TILE, 1), tiles = ceil(N / TILE);
//          gram_reduce 1D, global = N * N.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1))) void gram_partial(__global const float* restrict x,
                                                                                __global double* restrict partial) {
  const int tile_i = get_group_id(1), tile_j = get_group_id(0);
  if (tile_j < tile_i) return;  // the whole group: the lower triangle comes from the upper
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int segment = get_global_id(2);
  __local float a[TILE][TILE + 1];  // rows of tile i: a[row][feature]
  __local float b[TILE][TILE + 1];  // rows of tile j
  const int row_a = tile_i * TILE + ty, row_b = tile_j * TILE + ty;
  const int first = segment * SEG, last = min(first + SEG, P);
  double sum = 0.0;
  for (int f0 = first; f0 < last; f0 += TILE) {
    const int f = f0 + tx;
    a[ty][tx] = (row_a < N && f < last) ? x[(size_t)row_a * P + f] : 0.0f;
    b[ty][tx] = (row_b < N && f < last) ? x[(size_t)row_b * P + f] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) sum += (double)a[ty][k] * (double)b[tx][k];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const int i = row_a, j = tile_j * TILE + tx;
  if (i < N && j < N) partial[((size_t)segment * N + i) * N + j] = sum;
}

__kernel void gram_reduce(__global const double* restrict partial, __global double* restrict gram) {
  const size_t index = get_global_id(0);
  if (index >= (size_t)N * N) return;
  const int i = index / N, j = index % N;
  const size_t from = (j / TILE >= i / TILE) ? (size_t)i * N + j : (size_t)j * N + i;
  double sum = 0.0;
  for (int s = 0; s < S; ++s) sum += partial[(size_t)s * N * N + from];
  gram[index] = sum;
}
