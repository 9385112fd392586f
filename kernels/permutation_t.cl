// Permutation test of one t contrast (core/permutation/voxel_permutation.cpp, docs/algorithms/randomise.md): for each
// voxel and each rearrangement k of a launch, the Freedman-Lane statistic from P dot products of the voxel's nuisance
// residuals e with the rearranged columns of U, an orthonormal basis of the design's column space
// (core/permutation/t_contrast_model.hpp); a = U alpha lies in that space, so c'b* = alpha . d:
//   d_r = w_kr . e,  RSS = |e|^2 - sum_r d_r^2,  t = (alpha . d) / sqrt(RSS * scale),  scale = c'(M'M)^-1 c / dof.
//
// Memory layout (V = voxels in the mask, N = subjects, R = P rows per rearrangement):
//   resid    float [N][V]: the nuisance residuals, voxel fastest
//   sumsq    real [V]: |e|^2 per voxel
//   weights  real [nb][R][N]: the launch's rearranged columns of U (WSPACE: __constant when they fit, else __global)
//   alpha    real [R]: the contrast's coordinates in U; with STAT_F, real [R][R]: G, and the statistic is
//            F = d' G d / RSS (core/permutation/t_contrast_model.hpp; `scale` unused)
//   tobs     real [V]: the observed statistic (written by mode 0, a launch of the identity alone)
//   exceed   uint [V]: mode 1 adds, per voxel, the rearrangements whose t >= the observed t (relative slack 1e-5)
//   partial  float [groups][B]: mode 1 writes each work-group's largest t per rearrangement (-inf for none)
//   maps     float [nb][V]: with write_maps, mode 1 also writes every rearrangement's t map (cluster inference)
// Compile-time defines: N, R, B (rearrangements per launch, a multiple of CHUNK), WG (work-group size, a multiple of
// CHUNK, at most CHUNK * CHUNK), CHUNK (rearrangements reduced together in local memory), WSPACE, STAT_F (F
// contrasts).
// NDRange: 1D, global = V rounded up to WG, local = WG.
// The dot products run in double where the device has it (NVIDIA, PoCL; the host then passes double weights): a
// rearrangement whose t lies within float rounding of the observed one would otherwise be counted differently from the
// double-precision reference, and p values are counts.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif
#ifndef WSPACE
#define WSPACE __constant
#endif
#ifndef CHUNK
#define CHUNK 32
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void permutation_t(
    __global const float* restrict resid, __global const real* restrict sumsq, WSPACE const real* restrict weights,
    __constant real* restrict alpha, const int nb, const int voxels, const real scale, __global real* restrict tobs,
    __global uint* restrict exceed, __global float* restrict partial, const int mode, __global float* restrict maps,
    const int write_maps) {
  __local float tl[CHUNK][WG];
  __local float parts[WG / CHUNK][CHUNK];
  const int v = get_global_id(0);
  const int lid = get_local_id(0);
  const bool valid = v < voxels;
  real e[N];
  for (int j = 0; j < N; ++j) e[j] = valid ? resid[(size_t)j * voxels + v] : 0.0f;
  const real ss = valid ? sumsq[v] : 0.0f;
  const real observed = (mode == 1 && valid) ? tobs[v] : 0.0f;
  const real slack = 1e-5f * fabs(observed);
  uint hits = 0;
  for (int b0 = 0; b0 < nb; b0 += CHUNK) {
    for (int q = 0; q < CHUNK; ++q) {
      const int b = b0 + q;
      real t = -INFINITY;
      if (b < nb) {
        WSPACE const real* w = weights + (size_t)b * R * N;
        real d[R];
        real rss = ss;
        for (int r = 0; r < R; ++r) {
          real dot = 0.0f;
          for (int j = 0; j < N; ++j) dot = fma(w[r * N + j], e[j], dot);
          d[r] = dot;
          rss -= dot * dot;
        }
#ifdef STAT_F
        real num = 0.0f;  // d' G d
        for (int r = 0; r < R; ++r) {
          real row = 0.0f;
          for (int k = 0; k < R; ++k) row = fma(alpha[r * R + k], d[k], row);
          num = fma(d[r], row, num);
        }
        t = rss > 1e-12f * ss ? num / rss : 0.0f;
#else
        real num = 0.0f;  // alpha . d
        for (int r = 0; r < R; ++r) num = fma(alpha[r], d[r], num);
        t = rss > 1e-12f * ss ? num / sqrt(rss * scale) : 0.0f;
#endif
        if (mode == 0 && valid) tobs[v] = t;
        if (write_maps && valid) maps[(size_t)b * voxels + v] = (float)t;
        if (t >= observed - slack) ++hits;
      }
      tl[q][lid] = valid ? (float)t : -INFINITY;
    }
    if (mode == 0) continue;
    // The group's largest t per rearrangement of the chunk: WG / CHUNK parts of CHUNK items each, then the parts.
    barrier(CLK_LOCAL_MEM_FENCE);
    {
      const int q = lid % CHUNK, part = lid / CHUNK;
      float m = -INFINITY;
      for (int i = part * CHUNK; i < part * CHUNK + CHUNK; ++i) m = fmax(m, tl[q][i]);
      parts[part][q] = m;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < CHUNK && b0 + lid < nb) {
      float m = -INFINITY;
      for (int part = 0; part < WG / CHUNK; ++part) m = fmax(m, parts[part][lid]);
      partial[(size_t)get_group_id(0) * B + b0 + lid] = m;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (mode == 1 && valid) exceed[v] += hits;
}

// maxima[offset + b] = the largest of partial[g][b] over the groups, for b < nb. NDRange: 1D, global >= nb.
__kernel void max_over_groups(__global const float* restrict partial, const int groups, const int nb,
                              __global float* restrict maxima, const int offset) {
  const int b = get_global_id(0);
  if (b >= nb) return;
  float m = -INFINITY;
  for (int g = 0; g < groups; ++g) m = fmax(m, partial[(size_t)g * B + b]);
  maxima[offset + b] = m;
}
