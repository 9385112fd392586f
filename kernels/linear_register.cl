// Linear (affine) registration across two grids (docs/algorithms/registration.md): the sums of one Gauss-Newton /
// Levenberg-Marquardt iteration of the intensity-scaled least squares
//   E = sum over fixed sample points X of (s * M(T X) + o - F(X))^2
// whose minimum over the scale s and offset o is the fixed image's variance times (1 - NCC^2): minimising it maximises
// the normalised cross-correlation. T is parameterised here by its 12 entries about the fixed centre c:
// T X = B (X - c) + b; the host maps these derivatives to 6, 9 or 12 degrees of freedom by the chain rule.
//
// Memory layout: `fixed` is float on the fixed grid (fnx, fny, fnz), x fastest; `movgrad` a float4 per voxel of the
// moving grid (mnx, mny, mnz): (dM/dx, dM/dy, dM/dz in world mm, M) from rigid_register.cl's reference_gradient;
// `mask` a byte per fixed voxel. Matrices arrive as float4 rows r0, r1, r2 of a 3x4 affine on (x, y, z, 1):
// `to_moving` maps fixed voxels to moving voxel coordinates, `to_d` fixed voxels to X - c (world mm).
// `partial` is [rows][NTERMS] floats: the upper triangle of H = sum J^T J (14 x 14, row by row), b = sum J^T r (14),
// sum r^2, the number of points used, then sum F, sum F^2, sum M, sum M^2, sum F M (NTERMS = 126). The parameter
// order of J: B row by row (9), b (3), s, o.
// Sample points: fixed voxels stride * (i, j, k), enumerated x fastest; a point is used when its moving position lies
// within [0, n - 1] on every axis of the moving grid (and its mask byte is nonzero, with HAS_MASK).
// Compile-time defines: HAS_MASK; ITEM_PARTIALS (one row of `partial` per work-item, for CPU devices; `scratch`
// unused).
#include "partial_sums.clh"
#include "sampling.clh"

#define NPARAMS 14
#define NSUMS 5
#define NTERMS (NPARAMS * (NPARAMS + 1) / 2 + NPARAMS + 2 + NSUMS)

// NDRange: 1D, any number of groups (each item strides over the points); `scratch`: one float per work-item
// (power-of-two work-group size).
__kernel void linear_sums(__global const float* fixed,
#ifdef HAS_MASK
                          __global const uchar* mask,
#endif
                          __global const float4* movgrad, const int fnx, const int fny, const int fnz, const int mnx,
                          const int mny, const int mnz, const int stride, const int px, const int py, const int npoints,
                          const float4 m0, const float4 m1, const float4 m2, const float4 d0, const float4 d1,
                          const float4 d2, const float scale, const float offset, __global float* partial,
                          __local float* scratch) {
  float acc[NTERMS];
  for (int t = 0; t < NTERMS; ++t) acc[t] = 0.0f;
  for (int p = get_global_id(0); p < npoints; p += get_global_size(0)) {
    const int x = stride * (p % px);
    const int q = p / px;
    const int y = stride * (q % py);
    const int z = stride * (q / py);
    const size_t i = sampling_index(x, y, z, fnx, fny);
#ifdef HAS_MASK
    if (mask[i] == 0) continue;
#endif
    const float4 v = (float4)((float)x, (float)y, (float)z, 1.0f);
    const float3 u = apply_affine_rows(m0, m1, m2, v);
    if (!(u.x >= 0.0f && u.y >= 0.0f && u.z >= 0.0f && u.x <= mnx - 1 && u.y <= mny - 1 && u.z <= mnz - 1)) continue;
    const float4 gm = sample_linear4_clamped(movgrad, mnx, mny, mnz, u);
    const float f = fixed[i];
    if (!isfinite(f + gm.x + gm.y + gm.z + gm.w)) continue;
    const float3 g = scale * gm.xyz;
    const float3 d = apply_affine_rows(d0, d1, d2, v);
    float j[NPARAMS];
    j[0] = g.x * d.x;
    j[1] = g.x * d.y;
    j[2] = g.x * d.z;
    j[3] = g.y * d.x;
    j[4] = g.y * d.y;
    j[5] = g.y * d.z;
    j[6] = g.z * d.x;
    j[7] = g.z * d.y;
    j[8] = g.z * d.z;
    j[9] = g.x;
    j[10] = g.y;
    j[11] = g.z;
    j[12] = gm.w;
    j[13] = 1.0f;
    const float r = scale * gm.w + offset - f;
    int k = 0;
    for (int a = 0; a < NPARAMS; ++a) {
      for (int b = a; b < NPARAMS; ++b) acc[k++] += j[a] * j[b];
    }
    for (int a = 0; a < NPARAMS; ++a) acc[k++] += j[a] * r;
    acc[k++] += r * r;
    acc[k++] += 1.0f;
    acc[k++] += f;
    acc[k++] += f * f;
    acc[k++] += gm.w;
    acc[k++] += gm.w * gm.w;
    acc[k] += f * gm.w;
  }
  write_partial_sums(acc, NTERMS, partial, scratch);
}
