// Gaussian smoothing in one launch: each work-group smooths a TX x TY x TZ tile of one volume through
// local memory (x, y and z passes in place), for unmasked smoothing with edge renormalisation.
//
// Memory layout: `in`/`out` hold `nvol` volumes, volume-major, x fastest:
//   index = ((t * NZ + z) * NY + y) * NX + x   (NX*NY*NZ*nvol < 2^31, checked by the host).
// Local tile: tile[LZ][LY][PX] with L* = T* + 2 R* (the halo), PX = LX rounded up to odd (row-per-thread
// access without bank conflicts). After the x pass a row holds its TX results at [0, TX); after the y pass a
// column holds TY results at [0, TY); the z pass writes straight to `out`. Passes work in place: output o
// reads inputs [o, o + 2R] and is written to o after it is computed, so later outputs (reading >= o + 1)
// never see it. Each pass slides a register window of 2R+1 samples along its row or column (fully
// unrolled), so every local-memory sample is read once per pass rather than 2R+1 times. The tile load is
// unrolled so that all of a thread's global loads are in flight together (latency, not bandwidth, bounds
// a single small volume).
// NDRange: global (ceil(NX/TX) * WG, ceil(NY/TY), ceil(NZ/TZ) * nvol), local (WG, 1, 1).
// Samples outside the volume load as 0; the result is divided by the product of the per-axis sums of
// in-bounds taps, which equals normalised convolution with certainty 1 inside the volume (as the
// separable passes compute it).
// Defines: NX NY NZ, TX TY TZ, RX RY RZ (radii), WG (work-group size).

#define LX (TX + 2 * RX)
#define LY (TY + 2 * RY)
#define LZ (TZ + 2 * RZ)
#define PX (LX | 1)

// Sum of the taps of radius R that fall inside [0, len) around position pos.
inline float inbounds_weight(__constant const float* taps, const int radius, const int pos, const int len) {
  float w = 0.0f;
  for (int k = -radius; k <= radius; ++k) {
    const int p = pos + k;
    if (p >= 0 && p < len) w += taps[k + radius];
  }
  return w;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void smooth_fused(
    __global const float* restrict in, __global float* restrict out, __constant float* restrict taps_x,
    __constant float* restrict taps_y, __constant float* restrict taps_z, const int nvol) {
  __local float tile[LZ * LY * PX];
  const int lid = get_local_id(0);
  const int tiles_z = (NZ + TZ - 1) / TZ;
  const int t = get_group_id(2) / tiles_z;
  if (t >= nvol) return;
  const int x0 = (int)get_group_id(0) * TX - RX;
  const int y0 = (int)get_group_id(1) * TY - RY;
  const int z0 = (int)(get_group_id(2) % tiles_z) * TZ - RZ;
  __global const float* volume_in = in + (size_t)t * (NX * NY * NZ);

  // 1. Load the tile and its halo (zeros outside the volume).
#define LOAD_ITERS ((LX * LY * LZ + WG - 1) / WG)
#pragma unroll
  for (int it = 0; it < LOAD_ITERS; ++it) {
    const int i = lid + it * WG;
    if (i >= LX * LY * LZ) break;
    const int lx = i % LX;
    const int ly = (i / LX) % LY;
    const int lz = i / (LX * LY);
    const int gx = x0 + lx, gy = y0 + ly, gz = z0 + lz;
    const bool inside = gx >= 0 && gx < NX && gy >= 0 && gy < NY && gz >= 0 && gz < NZ;
    tile[(lz * LY + ly) * PX + lx] = inside ? volume_in[(gz * NY + gy) * NX + gx] : 0.0f;
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 2. x pass: one thread per (y, z) row; results to [0, TX) of the row.
  for (int r = lid; r < LY * LZ; r += WG) {
    __local float* row = tile + r * PX;
    float w[2 * RX + 1];
#pragma unroll
    for (int k = 0; k < 2 * RX; ++k) w[k + 1] = row[k];
#pragma unroll
    for (int o = 0; o < TX; ++o) {
#pragma unroll
      for (int k = 0; k < 2 * RX; ++k) w[k] = w[k + 1];
      w[2 * RX] = row[o + 2 * RX];
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k <= 2 * RX; ++k) s = fma(taps_x[k], w[k], s);
      row[o] = s;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 3. y pass: one thread per (x < TX, z) column; results to y in [0, TY).
  for (int c = lid; c < TX * LZ; c += WG) {
    const int lx = c % TX;
    const int lz = c / TX;
    __local float* col = tile + lz * LY * PX + lx;
    float w[2 * RY + 1];
#pragma unroll
    for (int k = 0; k < 2 * RY; ++k) w[k + 1] = col[k * PX];
#pragma unroll
    for (int o = 0; o < TY; ++o) {
#pragma unroll
      for (int k = 0; k < 2 * RY; ++k) w[k] = w[k + 1];
      w[2 * RY] = col[(o + 2 * RY) * PX];
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k <= 2 * RY; ++k) s = fma(taps_y[k], w[k], s);
      col[o * PX] = s;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // 4. z pass: one thread per (x < TX, y < TY) column; normalise and write to global memory.
  for (int c = lid; c < TX * TY; c += WG) {
    const int lx = c % TX;
    const int ly = c / TX;
    const int gx = x0 + RX + lx, gy = y0 + RY + ly;
    if (gx >= NX || gy >= NY) continue;
    const float wxy = inbounds_weight(taps_x, RX, gx, NX) * inbounds_weight(taps_y, RY, gy, NY);
    __local float* col = tile + ly * PX + lx;
    float w[2 * RZ + 1];
#pragma unroll
    for (int k = 0; k < 2 * RZ; ++k) w[k + 1] = col[k * LY * PX];
#pragma unroll
    for (int o = 0; o < TZ; ++o) {
#pragma unroll
      for (int k = 0; k < 2 * RZ; ++k) w[k] = w[k + 1];
      w[2 * RZ] = col[(o + 2 * RZ) * LY * PX];
      const int gz = z0 + RZ + o;
      if (gz < NZ) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k <= 2 * RZ; ++k) s = fma(taps_z[k], w[k], s);
        out[(size_t)t * (NX * NY * NZ) + (gz * NY + gy) * NX + gx] = s / (wxy * inbounds_weight(taps_z, RZ, gz, NZ));
      }
    }
  }
}
