// Rigid registration on the device (docs/algorithms/motion_correction.md): the reference's world-space gradient,
// one Gauss-Newton iteration's normal-equation sums, their reduction, and reslicing.
//
// Memory layout: volumes are float, x fastest: voxel (x, y, z) at (z * ny + y) * nx + x. `refgrad` holds a float4
// per voxel: (dT/dx, dT/dy, dT/dz in world mm, T) of the (smoothed) reference; the gradient is zero on border voxels.
// Matrices arrive as float4 rows r0, r1, r2 of a 3x4 affine acting on (x, y, z, 1).
// `partial` is [num_groups][NTERMS] floats, one row of per-work-group sums: the upper triangle of H = sum J^T J row
// by row (i <= j), then b = sum J^T r, then sum r^2, then the number of voxels used. `sums` is [NTERMS].
// Sample points: reference voxels first + stride * (i, j, k), first >= 1 (interior only), enumerated x fastest.
// Compile-time defines:
//   NPARAMS   6 (rigid) or 10 (rigid + linear intensity field)
//   CUBIC     sample the moving volume with Keys cubic convolution (a = -0.5) instead of trilinear; the sums then
//             skip points within one voxel of the edge, reslicing falls back to trilinear there
//   HAS_MASK  skip reference voxels whose mask byte is 0
//   ITEM_PARTIALS  each work-item writes its own row of `partial` (no local reduction; for CPU devices, where
//             barriers are expensive); `scratch` is then unused
// The host replaces non-finite voxels first (copy_filling_non_finite); points still not finite are skipped.

#include "partial_sums.clh"

#ifndef NPARAMS
#define NPARAMS 6
#endif
#ifndef NTERMS  // other kernels reuse reduce_partials with their own number of terms
#define NTERMS (NPARAMS * (NPARAMS + 1) / 2 + NPARAMS + 2)
#endif

inline size_t voxel_index(int x, int y, int z, int nx, int ny) {
  return ((size_t)z * ny + y) * nx + x;
}

inline float3 apply(float4 r0, float4 r1, float4 r2, float4 v) {
  return (float3)(dot(r0, v), dot(r1, v), dot(r2, v));
}

// Trilinear sample at voxel coordinates u; *inside = 0 when u lies outside [0, n-1] on any axis.
inline float sample_trilinear(__global const float* vol, int nx, int ny, int nz, float3 u, int* inside) {
  if (!(u.x >= 0.0f && u.y >= 0.0f && u.z >= 0.0f && u.x <= nx - 1 && u.y <= ny - 1 && u.z <= nz - 1)) {
    *inside = 0;
    return 0.0f;
  }
  *inside = 1;
  const int x0 = min((int)u.x, max(nx - 2, 0));
  const int y0 = min((int)u.y, max(ny - 2, 0));
  const int z0 = min((int)u.z, max(nz - 2, 0));
  const float fx = u.x - x0, fy = u.y - y0, fz = u.z - z0;
  const int x1 = min(x0 + 1, nx - 1), y1 = min(y0 + 1, ny - 1), z1 = min(z0 + 1, nz - 1);
  const float c00 = mix(vol[voxel_index(x0, y0, z0, nx, ny)], vol[voxel_index(x1, y0, z0, nx, ny)], fx);
  const float c10 = mix(vol[voxel_index(x0, y1, z0, nx, ny)], vol[voxel_index(x1, y1, z0, nx, ny)], fx);
  const float c01 = mix(vol[voxel_index(x0, y0, z1, nx, ny)], vol[voxel_index(x1, y0, z1, nx, ny)], fx);
  const float c11 = mix(vol[voxel_index(x0, y1, z1, nx, ny)], vol[voxel_index(x1, y1, z1, nx, ny)], fx);
  return mix(mix(c00, c10, fy), mix(c01, c11, fy), fz);
}

// Keys cubic convolution weights (a = -0.5) for the samples at floor(u) - 1 .. floor(u) + 2.
inline float4 cubic_weights(float f) {
  const float f2 = f * f, f3 = f2 * f;
  return (float4)(-0.5f * f3 + f2 - 0.5f * f, 1.5f * f3 - 2.5f * f2 + 1.0f, -1.5f * f3 + 2.0f * f2 + 0.5f * f,
                  0.5f * f3 - 0.5f * f2);
}

// Cubic sample where all 4x4x4 taps lie inside the volume (u in [1, n-2] on every axis); elsewhere the trilinear
// sample (in the registration sums, *inside = 0 there instead, so clamped taps never bias the fit).
inline float sample_cubic(__global const float* vol, int nx, int ny, int nz, float3 u, int* inside) {
  if (!(u.x >= 1.0f && u.y >= 1.0f && u.z >= 1.0f && u.x <= nx - 2 && u.y <= ny - 2 && u.z <= nz - 2)) {
    const float t = sample_trilinear(vol, nx, ny, nz, u, inside);
    if (*inside) *inside = 2;  // inside, but only trilinear
    return t;
  }
  *inside = 1;
  const int x0 = min((int)floor(u.x), nx - 3), y0 = min((int)floor(u.y), ny - 3), z0 = min((int)floor(u.z), nz - 3);
  const float4 wx = cubic_weights(u.x - x0), wy = cubic_weights(u.y - y0), wz = cubic_weights(u.z - z0);
  const float wxa[4] = {wx.x, wx.y, wx.z, wx.w};
  const float wya[4] = {wy.x, wy.y, wy.z, wy.w};
  const float wza[4] = {wz.x, wz.y, wz.z, wz.w};
  float sum = 0.0f;
  for (int k = 0; k < 4; ++k) {
    float plane = 0.0f;
    for (int j = 0; j < 4; ++j) {
      __global const float* row = vol + voxel_index(x0 - 1, y0 - 1 + j, z0 - 1 + k, nx, ny);
      plane += wya[j] * (wxa[0] * row[0] + wxa[1] * row[1] + wxa[2] * row[2] + wxa[3] * row[3]);
    }
    sum += wza[k] * plane;
  }
  return sum;
}

#ifdef CUBIC
#define SAMPLE sample_cubic
#else
#define SAMPLE sample_trilinear
#endif

// dst = src (starting at element `offset` of src) with NaN and infinite voxels replaced by the mean of their finite
// 26 neighbours (0 if none), counted in *count. An isolated bad voxel thus gets a value close to what it would have
// had, and regions of bad voxels (e.g. outside a reconstruction mask) become 0 inside. NDRange: 1D over all voxels.
__kernel void copy_filling_non_finite(__global const float* src, const ulong offset, __global float* dst, const int nx,
                                      const int ny, const int nz, __global int* count) {
  const int i = get_global_id(0);
  if (i >= nx * ny * nz) return;
  src += offset;
  const float v = src[i];
  if (isfinite(v)) {
    dst[i] = v;
    return;
  }
  atomic_inc(count);
  const int x = i % nx, y = (i / nx) % ny, z = i / (nx * ny);
  float sum = 0.0f;
  int n = 0;
  for (int dz = -1; dz <= 1; ++dz) {
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        const int xx = x + dx, yy = y + dy, zz = z + dz;
        if (xx < 0 || yy < 0 || zz < 0 || xx >= nx || yy >= ny || zz >= nz) continue;
        const float w = src[voxel_index(xx, yy, zz, nx, ny)];
        if (isfinite(w)) {
          sum += w;
          ++n;
        }
      }
    }
  }
  dst[i] = n > 0 ? sum / n : 0.0f;
}

// World-space gradient (central differences, then A^-T given as rows g0..g2) and value of the reference.
// NDRange: 1D over all voxels.
__kernel void reference_gradient(__global const float* ref, __global float4* refgrad, const int nx, const int ny,
                                 const int nz, const float4 g0, const float4 g1, const float4 g2) {
  const int i = get_global_id(0);
  if (i >= nx * ny * nz) return;
  const int x = i % nx, y = (i / nx) % ny, z = i / (nx * ny);
  const float t = ref[i];
  if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
    refgrad[i] = (float4)(0.0f, 0.0f, 0.0f, t);
    return;
  }
  const float4 gv = (float4)(0.5f * (ref[i + 1] - ref[i - 1]), 0.5f * (ref[i + nx] - ref[i - nx]),
                             0.5f * (ref[i + nx * ny] - ref[i - nx * ny]), 0.0f);
  refgrad[i] = (float4)(dot(g0, gv), dot(g1, gv), dot(g2, gv), t);
}

// Per-work-group (or, with ITEM_PARTIALS, per-work-item) sums of one Gauss-Newton iteration. NDRange: 1D, any number
// of groups (each item strides over the sample points); `scratch` holds one float per work-item (power-of-two
// work-group size).
__kernel void registration_sums(__global const float4* refgrad, __global const float* moving,
#ifdef HAS_MASK
                                __global const uchar* mask,
#endif
                                const int nx, const int ny, const int nz, const int first, const int stride,
                                const int px, const int py, const int npoints, const float4 m0, const float4 m1,
                                const float4 m2, const float4 d0, const float4 d1, const float4 d2, const float4 lambda,
                                const float inv_radius, __global float* partial, __local float* scratch) {
  float acc[NTERMS];
  for (int t = 0; t < NTERMS; ++t) acc[t] = 0.0f;
  for (int p = get_global_id(0); p < npoints; p += get_global_size(0)) {
    const int x = first + stride * (p % px);
    const int q = p / px;
    const int y = first + stride * (q % py);
    const int z = first + stride * (q / py);
    const size_t i = voxel_index(x, y, z, nx, ny);
#ifdef HAS_MASK
    if (mask[i] == 0) continue;
#endif
    const float4 v = (float4)((float)x, (float)y, (float)z, 1.0f);
    int inside;
    const float m = SAMPLE(moving, nx, ny, nz, apply(m0, m1, m2, v), &inside);
    if (inside != 1) continue;
    const float4 gt = refgrad[i];
    // A guard: the host replaced non-finite voxels before smoothing, so this should never skip a point.
    if (!isfinite(m + gt.x + gt.y + gt.z + gt.w)) continue;
    const float3 g = gt.xyz;
    const float3 d = apply(d0, d1, d2, v);
    const float3 rot = cross(d, g);
    float j[NPARAMS];
    j[0] = g.x;
    j[1] = g.y;
    j[2] = g.z;
    j[3] = rot.x;
    j[4] = rot.y;
    j[5] = rot.z;
    float predicted = gt.w;
#if NPARAMS == 10
    const float4 phi = (float4)(1.0f, d * inv_radius);
    j[6] = gt.w * phi.x;
    j[7] = gt.w * phi.y;
    j[8] = gt.w * phi.z;
    j[9] = gt.w * phi.w;
    predicted = gt.w * (1.0f + dot(lambda, phi));
#endif
    const float r = m - predicted;
    int k = 0;
    for (int a = 0; a < NPARAMS; ++a) {
      for (int b = a; b < NPARAMS; ++b) acc[k++] += j[a] * j[b];
    }
    for (int a = 0; a < NPARAMS; ++a) acc[k++] += j[a] * r;
    acc[k++] += r * r;
    acc[k] += 1.0f;
  }
  write_partial_sums(acc, NTERMS, partial, scratch);
}

// sums[t] = sum over groups of partial[g][t], with Kahan compensation. NDRange: 1D, >= NTERMS items.
__kernel void reduce_partials(__global const float* partial, const int groups, __global float* sums) {
  const int t = get_global_id(0);
  if (t >= NTERMS) return;
  float sum = 0.0f, comp = 0.0f;
  for (int g = 0; g < groups; ++g) {
    const float y = partial[(size_t)g * NTERMS + t] - comp;
    const float s = sum + y;
    comp = (s - sum) - y;
    sum = s;
  }
  sums[t] = sum;
}

// out(v) = moving(M v) for every voxel v (moving starts at element `offset`) (M: reference voxel -> moving voxel),
// `outside` beyond the volume. NDRange: 1D over all voxels.
__kernel void reslice(__global const float* moving, const ulong offset, __global float* out, const int nx, const int ny,
                      const int nz, const float4 m0, const float4 m1, const float4 m2, const float outside) {
  const int i = get_global_id(0);
  if (i >= nx * ny * nz) return;
  moving += offset;
  const float4 v = (float4)((float)(i % nx), (float)((i / nx) % ny), (float)(i / (nx * ny)), 1.0f);
  int inside;
  const float m = SAMPLE(moving, nx, ny, nz, apply(m0, m1, m2, v), &inside);
  out[i] = inside ? m : outside;
}
