// The local correlation (LNCC) cost of linear registration and its exact gradient with respect to the 12 entries of
// the transform T X = B (X - c) + b (docs/algorithms/registration.md, "Local correlation").
//
// The sample points form a lattice: fixed voxels stride * (i, j, k), i < px, j < py, k < pz (npoints = px py pz),
// enumerated x fastest, which the host smooths as a volume of its own (Gaussian windows of the local statistics).
// A point is inside when its moving position T X lies within [0, n - 1] of the moving grid (c = 1, else 0); the
// windows are normalised convolutions over the inside points (Knutsson & Westin 1993): with C = G*c the window means
// m_F = G*(c F) / C, m_J = G*(c J) / C, ... and (co)variances s at x, cc(x) = s_FJ^2 / (s_FF s_JJ), counted at inside
// points whose window is at least half inside (C >= 0.5) and whose variances exceed their eps. The derivative of
// sum_x cc(x) with respect to the moving sample J(y) of an inside point is exactly (G the window, symmetric):
//   F(y) (G*a)(y) - (G*(a m_F))(y) - J(y) (G*b)(y) + (G*(b m_J))(y),  a = 2 s_FJ / (C s_FF s_JJ), b = a s_FJ / s_JJ,
// which times the moving image's world gradient at T X_y gives the world-space gradient g(y); the sums are
// g_i (X - c)_j, g_i, cc and the number of counted points.
//
// Memory layout: `fixed` float on the fixed grid (fnx, fny), x fastest; `movgrad` a float4 per moving voxel (world
// gradient, value) from rigid_register.cl's reference_gradient; `mask` a byte per fixed voxel (HAS_MASK: points outside
// are not counted, and carry no a, b); lattice volumes are float, npoints each, back to back: `moments` = [c, c F,
// c F^2, c J, c J^2, c F J], `means` = the same smoothed, `terms` = [a, a m_F, b, b m_J], `grad` = three volumes (the
// world gradient of M at T X; 0 outside), `valid` = 1 for counted points.
// Matrices as float4 rows of 3x4 affines: `to_moving` fixed voxel -> moving voxel, `to_d` fixed voxel -> X - c.
// `partial` is [rows][LNCC_TERMS]. Compile-time defines: HAS_MASK, ITEM_PARTIALS (as partial_sums.clh).
#include "partial_sums.clh"
#include "sampling.clh"

#define LNCC_TERMS 14

inline int4 lattice_voxel(int p, int stride, int px, int py) {
  const int q = p / px;
  return (int4)(stride * (p % px), stride * (q % py), stride * (q / py), 0);
}

// moments and grad at every lattice point. NDRange: 1D over the points.
__kernel void lncc_lattice(__global const float* fixed, __global const float4* movgrad, const int fnx, const int fny,
                           const int mnx, const int mny, const int mnz, const int stride, const int px, const int py,
                           const int npoints, const float4 m0, const float4 m1, const float4 m2,
                           __global float* moments, __global float* grad) {
  const int p = get_global_id(0);
  if (p >= npoints) return;
  const int4 v = lattice_voxel(p, stride, px, py);
  const float f = fixed[sampling_index(v.x, v.y, v.z, fnx, fny)];
  const float3 u = apply_affine_rows(m0, m1, m2, (float4)((float)v.x, (float)v.y, (float)v.z, 1.0f));
  float c = 0.0f, j = 0.0f;
  float3 g = (float3)(0.0f);
  if (u.x >= 0.0f && u.y >= 0.0f && u.z >= 0.0f && u.x <= mnx - 1 && u.y <= mny - 1 && u.z <= mnz - 1) {
    const float4 gm = sample_linear4_clamped(movgrad, mnx, mny, mnz, u);
    c = 1.0f;
    j = gm.w;
    g = gm.xyz;
  }
  const size_t n = (size_t)npoints;
  moments[p] = c;
  moments[n + p] = c * f;
  moments[2 * n + p] = c * f * f;
  moments[3 * n + p] = j;
  moments[4 * n + p] = j * j;
  moments[5 * n + p] = f * j;
  grad[p] = g.x;
  grad[n + p] = g.y;
  grad[2 * n + p] = g.z;
}

// cc, valid and the terms [a, a m_F, b, b m_J] (0 where the point is not counted). NDRange: 1D over the points.
__kernel void lncc_terms(__global const float* moments, __global const float* means,
#ifdef HAS_MASK
                         __global const uchar* mask, const int fnx, const int fny, const int stride, const int px,
                         const int py,
#endif
                         const int npoints, const float eps_fixed, const float eps_moving, __global float* terms,
                         __global float* cc, __global float* valid) {
  const int p = get_global_id(0);
  if (p >= npoints) return;
  const size_t n = (size_t)npoints;
  const float cw = means[p];
  int counted = moments[p] > 0.0f && cw >= 0.5f;
  float a = 0.0f, b = 0.0f, c = 0.0f, mf = 0.0f, mj = 0.0f;
  if (counted) {
    const float inv_c = 1.0f / cw;
    mf = means[n + p] * inv_c;
    mj = means[3 * n + p] * inv_c;
    const float sff = means[2 * n + p] * inv_c - mf * mf;
    const float sjj = means[4 * n + p] * inv_c - mj * mj;
    const float sfj = means[5 * n + p] * inv_c - mf * mj;
    counted = sff > eps_fixed && sjj > eps_moving;
#ifdef HAS_MASK
    const int4 v = lattice_voxel(p, stride, px, py);
    counted = counted && mask[sampling_index(v.x, v.y, v.z, fnx, fny)] != 0;
#endif
    if (counted) {
      const float inv = 1.0f / (sff * sjj);
      c = sfj * sfj * inv;
      a = 2.0f * sfj * inv * inv_c;
      b = a * sfj / sjj;
    }
  }
  terms[p] = a;
  terms[n + p] = a * mf;
  terms[2 * n + p] = b;
  terms[3 * n + p] = b * mj;
  cc[p] = c;
  valid[p] = counted ? 1.0f : 0.0f;
}

// Partial sums of g_i d_j (row by row), g_i, cc and the count. NDRange: 1D, any number of groups; `scratch` one
// float per work-item (power-of-two work-group size).
__kernel void lncc_gradient_partials(__global const float* moments, __global const float* smoothed_terms,
                                     __global const float* grad, __global const float* cc, __global const float* valid,
                                     const int stride, const int px, const int py, const int npoints, const float4 d0,
                                     const float4 d1, const float4 d2, __global float* partial,
                                     __local float* scratch) {
  float acc[LNCC_TERMS];
  for (int t = 0; t < LNCC_TERMS; ++t) acc[t] = 0.0f;
  const size_t n = (size_t)npoints;
  for (int p = get_global_id(0); p < npoints; p += get_global_size(0)) {
    acc[12] += cc[p];
    acc[13] += valid[p];
    if (!(moments[p] > 0.0f)) continue;  // outside the moving image: no J(y) to move
    const float j = moments[3 * n + p];
    const float f = moments[n + p];
    const float dj =
        f * smoothed_terms[p] - smoothed_terms[n + p] - j * smoothed_terms[2 * n + p] + smoothed_terms[3 * n + p];
    const float3 g = dj * (float3)(grad[p], grad[n + p], grad[2 * n + p]);
    const int4 v = lattice_voxel(p, stride, px, py);
    const float3 d = apply_affine_rows(d0, d1, d2, (float4)((float)v.x, (float)v.y, (float)v.z, 1.0f));
    add_affine_gradient(acc, g, d);
  }
  write_partial_sums(acc, LNCC_TERMS, partial, scratch);
}
