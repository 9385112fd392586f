// Resampling an image onto another grid through a chain of spatial transforms (docs/algorithms/registration.md).
// The chain is applied to points: each voxel v of the output (reference) grid starts at its world position A_ref v
// (world_positions), every transform of the chain maps it on (affine_positions: p <- T p; field_positions: p <- p +
// u(p) with u a displacement field), and the input image is then sampled at B p, B = A_in^-1 (sample_positions). 4D
// inputs reuse the positions for every volume.
//
// sample_affine does the same in one pass when the chain is one affine and the volumes are already on the device.
//
// Memory layout: `pos` holds a float4 per output voxel, (x, y, z world mm, 0), x fastest; volumes are float, x fastest,
// the input volume starting at element `in_offset`, the output volume at `out_offset`. A displacement field is three
// float volumes (x, y, z components in world mm, each x fastest) on its own grid. Matrices arrive as float4 rows
// r0, r1, r2 of a 3x4 affine acting on (x, y, z, 1).
// Compile-time define INTERP: 0 nearest, 1 trilinear (default), 2 Keys cubic; sampling conventions in sampling.clh.
#include "sampling.clh"

#ifndef INTERP
#define INTERP 1
#endif

// pos[i] = A v for output voxel v = (x, y, z). NDRange: 1D over the output voxels.
__kernel void world_positions(__global float4* pos, const int nx, const int ny, const int nz, const float4 a0,
                              const float4 a1, const float4 a2) {
  const size_t i = get_global_id(0);
  if (i >= (size_t)nx * ny * nz) return;
  const float4 v = (float4)((float)(i % nx), (float)((i / nx) % ny), (float)(i / ((size_t)nx * ny)), 1.0f);
  pos[i] = (float4)(apply_affine_rows(a0, a1, a2, v), 0.0f);
}

// pos[i] <- T pos[i]. NDRange: 1D over `count` positions.
__kernel void affine_positions(__global float4* pos, const ulong count, const float4 t0, const float4 t1,
                               const float4 t2) {
  const size_t i = get_global_id(0);
  if (i >= count) return;
  const float4 p = (float4)(pos[i].xyz, 1.0f);
  pos[i] = (float4)(apply_affine_rows(t0, t1, t2, p), 0.0f);
}

// pos[i] <- pos[i] + u(W pos[i]), u interpolated trilinearly on the field's grid (W: world -> field voxel), 0 where the
// point lies outside the field (as ITK's DisplacementFieldTransform). NDRange: 1D over `count` positions.
__kernel void field_positions(__global float4* pos, const ulong count, __global const float* field, const int nx,
                              const int ny, const int nz, const float4 w0, const float4 w1, const float4 w2) {
  const size_t i = get_global_id(0);
  if (i >= count) return;
  const float3 p = pos[i].xyz;
  const float3 u = apply_affine_rows(w0, w1, w2, (float4)(p, 1.0f));
  if (!sampling_inside(u, nx, ny, nz)) return;
  const size_t n = (size_t)nx * ny * nz;
  const float3 d =
      (float3)(sample_linear_clamped(field, nx, ny, nz, u), sample_linear_clamped(field + n, nx, ny, nz, u),
               sample_linear_clamped(field + 2 * n, nx, ny, nz, u));
  pos[i] = (float4)(p + d, 0.0f);
}

// out[i] = in sampled at B pos[i], or `outside` where that point lies outside the input. NDRange: 1D over `count`.
__kernel void sample_positions(__global const float* in, const ulong in_offset, const int nx, const int ny,
                               const int nz, __global const float4* pos, __global float* out, const ulong out_offset,
                               const ulong count, const float4 b0, const float4 b1, const float4 b2,
                               const float outside) {
  const size_t i = get_global_id(0);
  if (i >= count) return;
  in += in_offset;
  const float3 u = apply_affine_rows(b0, b1, b2, (float4)(pos[i].xyz, 1.0f));
  float value = outside;
  if (sampling_inside(u, nx, ny, nz)) {
#if INTERP == 0
    value = sample_nearest_clamped(in, nx, ny, nz, u);
#elif INTERP == 2
    value = sample_cubic_clamped(in, nx, ny, nz, u);
#else
    value = sample_linear_clamped(in, nx, ny, nz, u);
#endif
  }
  out[out_offset + i] = value;
}

// Device-resident resampling through one affine: out[out_offset + i] = the input volume sampled at M v, v the output
// voxel (x, y, z) of linear index i on the (ox, oy, oz) grid and M (rows m0, m1, m2) output voxel -> input voxel;
// points outside the input get `outside`. NDRange: 1D over the output voxels.
__kernel void sample_affine(__global const float* in, const ulong in_offset, const int nx, const int ny, const int nz,
                            __global float* out, const ulong out_offset, const int ox, const int oy, const int oz,
                            const float4 m0, const float4 m1, const float4 m2, const float outside) {
  const size_t i = get_global_id(0);
  if (i >= (size_t)ox * oy * oz) return;
  in += in_offset;
  const float4 v = (float4)((float)(i % ox), (float)((i / ox) % oy), (float)(i / ((size_t)ox * oy)), 1.0f);
  const float3 u = apply_affine_rows(m0, m1, m2, v);
  float value = outside;
  if (sampling_inside(u, nx, ny, nz)) {
#if INTERP == 0
    value = sample_nearest_clamped(in, nx, ny, nz, u);
#elif INTERP == 2
    value = sample_cubic_clamped(in, nx, ny, nz, u);
#else
    value = sample_linear_clamped(in, nx, ny, nz, u);
#endif
  }
  out[out_offset + i] = value;
}
