// Deformation fields of the non-linear registration (docs/algorithms/normalization.md): composing fields (the scaling
// and squaring of a stationary velocity field), warping the moving image, the local-correlation and demons forces,
// updating the velocity, the largest vector norm, the Jacobian determinant, changing a field's units and the final
// warp's checks.
//
// Memory layout: a field is three float volumes back to back, [component][z][y][x] (x fastest), n = nx * ny * nz
// voxels each: component c of voxel i at c * n + i, a displacement in voxel units of the grid. Volumes are float, x
// fastest, on the same grid. A field is sampled trilinearly with its taps clamped to the grid, so that beyond the grid
// it continues as its edge values (a zero field outside would fold the exponential at the grid's faces). Volumes are
// sampled as sampling.clh says (0 outside [-0.5, n - 0.5]). NDRange: 1D over the voxels unless a kernel says
// otherwise; every kernel bounds-checks.
#include "sampling.clh"

inline float3 load_field(__global const float* f, size_t i, size_t n) {
  return (float3)(f[i], f[n + i], f[2 * n + i]);
}

inline void store_field(__global float* f, size_t i, size_t n, float3 v) {
  f[i] = v.x;
  f[n + i] = v.y;
  f[2 * n + i] = v.z;
}

inline float3 voxel_coordinates(size_t i, int nx, int ny) {
  return (float3)((float)(i % nx), (float)((i / nx) % ny), (float)(i / ((size_t)nx * ny)));
}

// The three components sampled at voxel coordinates p with one set of trilinear weights (taps clamped to the grid).
inline float3 sample_field(__global const float* f, int nx, int ny, int nz, float3 p) {
  const size_t n = (size_t)nx * ny * nz;
  const float3 c = clamp(p, (float3)(0.0f), (float3)(nx - 1, ny - 1, nz - 1));
  const int x0 = min((int)c.x, max(nx - 2, 0)), y0 = min((int)c.y, max(ny - 2, 0)), z0 = min((int)c.z, max(nz - 2, 0));
  const int x1 = min(x0 + 1, nx - 1), y1 = min(y0 + 1, ny - 1), z1 = min(z0 + 1, nz - 1);
  const float fx = c.x - x0, fy = c.y - y0, fz = c.z - z0;
  const size_t i000 = sampling_index(x0, y0, z0, nx, ny), i100 = sampling_index(x1, y0, z0, nx, ny);
  const size_t i010 = sampling_index(x0, y1, z0, nx, ny), i110 = sampling_index(x1, y1, z0, nx, ny);
  const size_t i001 = sampling_index(x0, y0, z1, nx, ny), i101 = sampling_index(x1, y0, z1, nx, ny);
  const size_t i011 = sampling_index(x0, y1, z1, nx, ny), i111 = sampling_index(x1, y1, z1, nx, ny);
  float3 out;
  for (int k = 0; k < 3; ++k) {
    __global const float* g = f + (size_t)k * n;
    const float c00 = mix(g[i000], g[i100], fx), c10 = mix(g[i010], g[i110], fx);
    const float c01 = mix(g[i001], g[i101], fx), c11 = mix(g[i011], g[i111], fx);
    const float v = mix(mix(c00, c10, fy), mix(c01, c11, fy), fz);
    if (k == 0) out.x = v;
    if (k == 1) out.y = v;
    if (k == 2) out.z = v;
  }
  return out;
}

// Central differences of a volume at (x, y, z) in voxel units; 0 on the grid's outer faces.
inline float3 central_gradient(__global const float* v, int x, int y, int z, int nx, int ny, int nz) {
  if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) return (float3)(0.0f);
  const size_t i = sampling_index(x, y, z, nx, ny);
  const size_t sy = (size_t)nx, sz = (size_t)nx * ny;
  return (float3)(0.5f * (v[i + 1] - v[i - 1]), 0.5f * (v[i + sy] - v[i - sy]), 0.5f * (v[i + sz] - v[i - sz]));
}

// out(x) = s a(x) + s b(x + s a(x)): the field of (id + s b) o (id + s a). With a = b = v and s = 2^-K the first step
// of exp(v); with s = 1 a squaring. `out` must not alias a or b.
__kernel void compose_fields(__global const float* a, __global const float* b, __global float* out, const int nx,
                             const int ny, const int nz, const float scale) {
  const size_t i = get_global_id(0);
  const size_t n = (size_t)nx * ny * nz;
  if (i >= n) return;
  const float3 ua = scale * load_field(a, i, n);
  const float3 p = voxel_coordinates(i, nx, ny) + ua;
  store_field(out, i, n, ua + scale * sample_field(b, nx, ny, nz, p));
}

// J(x) = M(x + u(x)) (trilinear, 0 outside) and the products the local correlation needs: moments = [J, J^2, F J].
__kernel void warp_moments(__global const float* moving, __global const float* fixed, __global const float* u,
                           const int nx, const int ny, const int nz, __global float* moments) {
  const size_t i = get_global_id(0);
  const size_t n = (size_t)nx * ny * nz;
  if (i >= n) return;
  const float3 p = voxel_coordinates(i, nx, ny) + load_field(u, i, n);
  const float j = sampling_inside(p, nx, ny, nz) ? sample_linear_clamped(moving, nx, ny, nz, p) : 0.0f;
  moments[i] = j;
  moments[n + i] = j * j;
  moments[2 * n + i] = fixed[i] * j;
}

// moments = [F, F^2], smoothed once per level for the fixed image's local statistics.
__kernel void fixed_moments(__global const float* fixed, const ulong n, __global float* moments) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float f = fixed[i];
  moments[i] = f;
  moments[n + i] = f * f;
}

// out = 1 where the fixed image's local variance (from `fixed_means` = smoothed [F, F^2]) exceeds eps, else 0: the
// voxels where a local correlation is defined.
__kernel void variance_indicator(__global const float* fixed_means, const ulong n, const float eps,
                                 __global float* out) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float m = fixed_means[i];
  out[i] = fixed_means[n + i] - m * m > eps ? 1.0f : 0.0f;
}

// The local correlation cc = s_FJ^2 / (s_FF s_JJ) and its ascent force
//   2 s_FJ / (s_FF s_JJ) [(F - m_F) - (s_FJ / s_JJ) (J - m_J)] grad J
// from the window means: `window_means` = smoothed [J, J^2, F J], `fixed_means` = smoothed [F, F^2]; `warped` is J.
// Both are 0 where s_FF <= eps_fixed or s_JJ <= eps_moving. (The force is indifferent to the images' intensity scales;
// the eps guards are given in each image's squared units.)
__kernel void lncc_force(__global const float* fixed, __global const float* warped, __global const float* window_means,
                         __global const float* fixed_means, const int nx, const int ny, const int nz,
                         const float eps_fixed, const float eps_moving, __global float* force, __global float* cc) {
  const size_t i = get_global_id(0);
  const size_t n = (size_t)nx * ny * nz;
  if (i >= n) return;
  const float mf = fixed_means[i], mj = window_means[i];
  const float sff = fixed_means[n + i] - mf * mf;
  const float sjj = window_means[n + i] - mj * mj;
  const float sfj = window_means[2 * n + i] - mf * mj;
  float3 f = (float3)(0.0f);
  float c = 0.0f;
  if (sff > eps_fixed && sjj > eps_moving) {
    const float inv = 1.0f / (sff * sjj);
    c = sfj * sfj * inv;
    const float d = 2.0f * sfj * inv * ((fixed[i] - mf) - sfj / sjj * (warped[i] - mj));
    const int x = (int)(i % nx), y = (int)((i / nx) % ny), z = (int)(i / ((size_t)nx * ny));
    f = d * central_gradient(warped, x, y, z, nx, ny, nz);
  }
  store_field(force, i, n, f);
  cc[i] = c;
}

// The demons force of the squared difference, (F - J) grad J / (|grad J|^2 + alpha^2 (F - J)^2) (0 where the
// denominator is below 1e-12), and the per-voxel cost (F - J)^2.
__kernel void demons_force(__global const float* fixed, __global const float* warped, const int nx, const int ny,
                           const int nz, const float alpha2, __global float* force, __global float* cost) {
  const size_t i = get_global_id(0);
  const size_t n = (size_t)nx * ny * nz;
  if (i >= n) return;
  const float diff = fixed[i] - warped[i];
  const int x = (int)(i % nx), y = (int)((i / nx) % ny), z = (int)(i / ((size_t)nx * ny));
  const float3 g = central_gradient(warped, x, y, z, nx, ny, nz);
  const float den = dot(g, g) + alpha2 * diff * diff;
  store_field(force, i, n, den > 1e-12f ? diff / den * g : (float3)(0.0f));
  cost[i] = diff * diff;
}

// v = a v + b where v != 0 (the background stays 0): intensities matched and scaled for the demons force.
__kernel void scale_intensity(__global float* v, const ulong n, const float a, const float b) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float x = v[i];
  v[i] = x != 0.0f ? a * x + b : 0.0f;
}

// v += scale * f over `count` floats (a whole field: count = 3 n).
__kernel void add_scaled(__global float* v, __global const float* f, const ulong count, const float scale) {
  const size_t i = get_global_id(0);
  if (i >= count) return;
  v[i] += scale * f[i];
}

// The largest |f(x)| per work-group: partial[group] (power-of-two work-group size; `scratch` one float per item).
// NDRange: 1D, any number of groups; each item strides over the voxels.
__kernel void field_norm_max(__global const float* f, const ulong n, __global float* partial, __local float* scratch) {
  float best = 0.0f;
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) best = max(best, length(load_field(f, i, n)));
  const size_t lid = get_local_id(0);
  scratch[lid] = best;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = max(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = scratch[0];
}

// scale[0] = min(gain, step / m) with m the largest of the `groups` partial maxima of field_norm_max (0 when m is 0):
// the capped gain of one update, computed on the device so that the host need not wait. NDRange: one work-item.
__kernel void capped_gain(__global const float* partial, const int groups, const float gain, const float step,
                          __global float* scale) {
  if (get_global_id(0) != 0) return;
  float m = 0.0f;
  for (int g = 0; g < groups; ++g) m = fmax(m, partial[g]);
  scale[0] = m > 0.0f ? fmin(gain, step / m) : 0.0f;
}

// v += scale[0] * f over `count` floats, the scale read from the device (capped_gain).
__kernel void add_scaled_by(__global float* v, __global const float* f, const ulong count,
                            __global const float* scale) {
  const size_t i = get_global_id(0);
  if (i >= count) return;
  v[i] += scale[0] * f[i];
}

// det(I + Du), Du by central differences in voxel units (one-sided on the grid's faces).
__kernel void jacobian_determinant(__global const float* u, const int nx, const int ny, const int nz,
                                   __global float* det) {
  const size_t i = get_global_id(0);
  const size_t n = (size_t)nx * ny * nz;
  if (i >= n) return;
  const int x = (int)(i % nx), y = (int)((i / nx) % ny), z = (int)(i / ((size_t)nx * ny));
  const int xl = max(x - 1, 0), xh = min(x + 1, nx - 1), yl = max(y - 1, 0), yh = min(y + 1, ny - 1);
  const int zl = max(z - 1, 0), zh = min(z + 1, nz - 1);
  const float3 dx =
      xh > xl
          ? (load_field(u, sampling_index(xh, y, z, nx, ny), n) - load_field(u, sampling_index(xl, y, z, nx, ny), n)) /
                (float)(xh - xl)
          : (float3)(0.0f);
  const float3 dy =
      yh > yl
          ? (load_field(u, sampling_index(x, yh, z, nx, ny), n) - load_field(u, sampling_index(x, yl, z, nx, ny), n)) /
                (float)(yh - yl)
          : (float3)(0.0f);
  const float3 dz =
      zh > zl
          ? (load_field(u, sampling_index(x, y, zh, nx, ny), n) - load_field(u, sampling_index(x, y, zl, nx, ny), n)) /
                (float)(zh - zl)
          : (float3)(0.0f);
  // J = I + [dx dy dz] (columns: derivatives along x, y, z; rows: components).
  const float3 c0 = (float3)(1.0f + dx.x, dx.y, dx.z);
  const float3 c1 = (float3)(dy.x, 1.0f + dy.y, dy.z);
  const float3 c2 = (float3)(dz.x, dz.y, 1.0f + dz.z);
  det[i] = dot(c0, cross(c1, c2));
}

// out(x) = M f(x) for the 3x3 matrix with rows r0, r1, r2 (.xyz; .w ignored): a field from one grid's voxel units to
// another's, or to world mm. `out` may alias `f`.
__kernel void transform_vectors(__global const float* f, __global float* out, const ulong n, const float4 r0,
                                const float4 r1, const float4 r2) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float3 v = load_field(f, i, n);
  store_field(out, i, n, (float3)(dot(r0.xyz, v), dot(r1.xyz, v), dot(r2.xyz, v)));
}

// The checks of a final warp, per work-group (power-of-two work-group size; `scratch` CHECK_TERMS floats per item):
// partial[group * CHECK_TERMS + k] for k = 0 the smallest det, 1 the largest det, 2 voxels with det <= 0, 3 of those
// inside the mask (mask_image > 0), 4 voxels inside the mask, 5 the sum and 6 the largest |residual| inside the mask
// (`residual`: a field, e.g. the inverse's error in mm). NDRange: 1D, any number of groups; items stride over voxels.
#define CHECK_TERMS 7
__kernel void warp_check_partials(__global const float* det, __global const float* residual,
                                  __global const float* mask_image, const ulong n, __global float* partial,
                                  __local float* scratch) {
  float acc[CHECK_TERMS] = {INFINITY, -INFINITY, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) {
    const float d = det[i];
    const int in_mask = mask_image[i] > 0.0f;
    acc[0] = fmin(acc[0], d);
    acc[1] = fmax(acc[1], d);
    if (!(d > 0.0f)) {
      acc[2] += 1.0f;
      if (in_mask) acc[3] += 1.0f;
    }
    if (in_mask) {
      const float e = length(load_field(residual, i, n));
      acc[4] += 1.0f;
      acc[5] += e;
      acc[6] = fmax(acc[6], e);
    }
  }
  const size_t lid = get_local_id(0);
  for (int k = 0; k < CHECK_TERMS; ++k) scratch[lid * CHECK_TERMS + k] = acc[k];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) {
      __local float* a = scratch + lid * CHECK_TERMS;
      __local const float* b = scratch + (lid + s) * CHECK_TERMS;
      a[0] = fmin(a[0], b[0]);
      a[1] = fmax(a[1], b[1]);
      a[2] += b[2];
      a[3] += b[3];
      a[4] += b[4];
      a[5] += b[5];
      a[6] = fmax(a[6], b[6]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    for (int k = 0; k < CHECK_TERMS; ++k) partial[get_group_id(0) * CHECK_TERMS + k] = scratch[k];
  }
}
