// Mutual information of a fixed and a moving image across grids, and its gradient with respect to the 12 entries of
// the transform (Mattes et al. 2003, as ITK's MattesMutualInformation; docs/algorithms/registration.md).
//
// Joint histogram: BINS x BINS. A sample point X (fixed voxel stride * (i, j, k), inside `mask` with HAS_MASK, and
// whose moving position u = to_moving X lies within [0, n - 1] of the moving grid) falls in fixed bin
// a = clamp(floor((F - fmin) * finv), 0, BINS - 1) (a box window) and spreads over moving bins k with the cubic
// B-spline weights beta3(k - e), e = 2 + (M - mmin) * minv clamped to [2, BINS - 3] (so the four bins floor(e) - 1 ..
// floor(e)
// + 2 lie inside). M and its world gradient are interpolated trilinearly from `movgrad`.
//
// Memory layout: `fixed` float on the fixed grid, x fastest; `movgrad` a float4 per moving voxel (dM/dx, dM/dy, dM/dz
// world mm, M) (rigid_register.cl's reference_gradient); `mask` a byte per fixed voxel; matrices as float4 rows of 3x4
// affines on (x, y, z, 1): `to_moving` fixed voxel -> moving voxel, `to_d` fixed voxel -> X - c (world mm).
// mi_histogram: `partial` is [rows][BINS * BINS + 1]: the joint histogram row a, column k at a * BINS + k, then the
// number of points. mi_gradient: `log_ratio` is [BINS][BINS], log(p(a, k) / p_M(k)) (0 where p(a, k) = 0);
// `partial` is [rows][13]: sum over points of q * g_i * d_j (i, j = 0..2, row by row), q * g_i, then the count, with
// q = sum_k beta3'(e - k) * log_ratio[a][k]; dMI/dT = (minv / N) * these sums (the host scales them).
// Compile-time defines: BINS (default 32), HAS_MASK, ITEM_PARTIALS (one row per work-item: CPU devices).
#include "partial_sums.clh"
#include "sampling.clh"

#ifndef BINS
#define BINS 32
#endif
#define HIST_TERMS (BINS * BINS + 1)
#ifdef HAS_MASK
#define MASK_PARAM __global const uchar *mask,
#define MASK_ARG mask,
#else
#define MASK_PARAM
#define MASK_ARG
#endif
#define GRAD_TERMS 13

inline float bspline3(float t) {
  t = fabs(t);
  if (t < 1.0f) return (4.0f - 6.0f * t * t + 3.0f * t * t * t) / 6.0f;
  if (t < 2.0f) {
    const float s = 2.0f - t;
    return s * s * s / 6.0f;
  }
  return 0.0f;
}

inline float bspline3_derivative(float t) {
  const float a = fabs(t);
  if (a < 1.0f) return -2.0f * t + 1.5f * t * a;
  if (a < 2.0f) {
    const float s = 2.0f - a;
    return t > 0.0f ? -0.5f * s * s : 0.5f * s * s;
  }
  return 0.0f;
}

// The point's fixed bin, moving bin coordinate, interpolated (gradient, value) and d; 0 when it is not used.
inline int mi_point(__global const float* fixed, MASK_PARAM __global const float4* movgrad, int p, int fnx, int fny,
                    int mnx, int mny, int mnz, int stride, int px, int py, float4 m0, float4 m1, float4 m2, float fmin,
                    float finv, float mmin, float minv, int* a, float* e, float4* gm, float4* v) {
  const int x = stride * (p % px);
  const int q = p / px;
  const int y = stride * (q % py);
  const int z = stride * (q / py);
  const size_t i = sampling_index(x, y, z, fnx, fny);
#ifdef HAS_MASK
  if (mask[i] == 0) return 0;
#endif
  *v = (float4)((float)x, (float)y, (float)z, 1.0f);
  const float3 u = apply_affine_rows(m0, m1, m2, *v);
  if (!(u.x >= 0.0f && u.y >= 0.0f && u.z >= 0.0f && u.x <= mnx - 1 && u.y <= mny - 1 && u.z <= mnz - 1)) return 0;
  *gm = sample_linear4_clamped(movgrad, mnx, mny, mnz, u);
  const float f = fixed[i];
  if (!isfinite(f + (*gm).x + (*gm).y + (*gm).z + (*gm).w)) return 0;
  *a = clamp((int)floor((f - fmin) * finv), 0, BINS - 1);
  *e = clamp(2.0f + ((*gm).w - mmin) * minv, 2.0f, (float)(BINS - 3));
  return 1;
}

// Float add to local memory (OpenCL 1.2 has no float atomics).
inline void local_add(volatile __local float* target, float value) {
  union {
    unsigned int u;
    float f;
  } old, next;
  do {
    old.f = *target;
    next.f = old.f + value;
  } while (atomic_cmpxchg((volatile __local unsigned int*)target, old.u, next.u) != old.u);
}

// NDRange: 1D, any number of groups. Without ITEM_PARTIALS `scratch` holds HIST_TERMS floats (the group's histogram).
__kernel void mi_histogram(__global const float* fixed, MASK_PARAM __global const float4* movgrad, const int fnx,
                           const int fny, const int mnx, const int mny, const int mnz, const int stride, const int px,
                           const int py, const int npoints, const float4 m0, const float4 m1, const float4 m2,
                           const float fmin, const float finv, const float mmin, const float minv,
                           __global float* partial, __local float* scratch) {
#ifdef ITEM_PARTIALS
  __global float* hist = partial + (size_t)get_global_id(0) * HIST_TERMS;
  for (int t = 0; t < HIST_TERMS; ++t) hist[t] = 0.0f;
#else
  for (int t = get_local_id(0); t < HIST_TERMS; t += get_local_size(0)) scratch[t] = 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  for (int p = get_global_id(0); p < npoints; p += get_global_size(0)) {
    int a;
    float e;
    float4 gm, v;
    if (!mi_point(fixed, MASK_ARG movgrad, p, fnx, fny, mnx, mny, mnz, stride, px, py, m0, m1, m2, fmin, finv, mmin,
                  minv, &a, &e, &gm, &v)) {
      continue;
    }
    const int k0 = (int)floor(e);
    for (int k = k0 - 1; k <= k0 + 2; ++k) {
      const float w = bspline3((float)k - e);
#ifdef ITEM_PARTIALS
      hist[a * BINS + k] += w;
#else
      local_add(scratch + a * BINS + k, w);
#endif
    }
#ifdef ITEM_PARTIALS
    hist[BINS * BINS] += 1.0f;
#else
    local_add(scratch + BINS * BINS, 1.0f);
#endif
  }
#ifndef ITEM_PARTIALS
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int t = get_local_id(0); t < HIST_TERMS; t += get_local_size(0)) {
    partial[(size_t)get_group_id(0) * HIST_TERMS + t] = scratch[t];
  }
#endif
}

// NDRange: 1D, any number of groups; `scratch`: one float per work-item (power-of-two work-group size).
__kernel void mi_gradient(__global const float* fixed, MASK_PARAM __global const float4* movgrad, const int fnx,
                          const int fny, const int mnx, const int mny, const int mnz, const int stride, const int px,
                          const int py, const int npoints, const float4 m0, const float4 m1, const float4 m2,
                          const float4 d0, const float4 d1, const float4 d2, const float fmin, const float finv,
                          const float mmin, const float minv, __global const float* log_ratio, __global float* partial,
                          __local float* scratch) {
  float acc[GRAD_TERMS];
  for (int t = 0; t < GRAD_TERMS; ++t) acc[t] = 0.0f;
  for (int p = get_global_id(0); p < npoints; p += get_global_size(0)) {
    int a;
    float e;
    float4 gm, v;
    if (!mi_point(fixed, MASK_ARG movgrad, p, fnx, fny, mnx, mny, mnz, stride, px, py, m0, m1, m2, fmin, finv, mmin,
                  minv, &a, &e, &gm, &v)) {
      continue;
    }
    const int k0 = (int)floor(e);
    float q = 0.0f;
    for (int k = k0 - 1; k <= k0 + 2; ++k) q += bspline3_derivative(e - (float)k) * log_ratio[a * BINS + k];
    const float3 g = q * gm.xyz;
    const float3 d = apply_affine_rows(d0, d1, d2, v);
    add_affine_gradient(acc, g, d);
    acc[12] += 1.0f;
  }
  write_partial_sums(acc, GRAD_TERMS, partial, scratch);
}
