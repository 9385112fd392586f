// Sliding-window canonical correlation analysis (CCA) with spatial basis filters (Friman et al. 2003, as run on the
// GPU by Eklund et al. 2012). Stage 1 filters each new volume with the spatial basis filters (separable Gaussian
// moment passes, combined into the filters); stage 2 computes, per voxel, the covariances of the filter responses and
// the whitened temporal basis over the window and solves the restricted CCA (non-negative spatial weights) exactly by
// enumerating filter subsets. docs/algorithms/cca.md has the definitions.
//
// Memory layout (float unless stated; NVOX = NX*NY*NZ; voxel v = (z*NY + y)*NX + x):
//   in           volumes, volume-major; the volume being filtered starts at element `offset`
//   baseline     [NVOX]         a fixed volume subtracted before filtering (the first filtered since the cache was
//                               reset): responses shift by a per-voxel constant, which CCA ignores, and the float
//                               sums then carry the fluctuations instead of the ~1000 baseline of fMRI signals
//   xmom         [3][NVOX]      x pass: sum_i k_p(i) in(x+i), p = 0, 1, 2 (Gaussian times (u/sigma)^p)
//   xymom        [6][NVOX]      VOLUMETRIC only, y pass: moments (p,q) in the order 00 10 01 20 02 11
//   responses    [slot][NFILT][NVOXP]  filter responses of the cached volumes (NVOXP = NVOX rounded up to VEC voxels,
//                               the padding is zero); a volume's block starts at `out_offset`
//   window_slot  int [n]        cache slot of the window's j-th volume (any order: CCA does not depend on it)
//   window_z     [n][NTEMP], then [NTEMP]: the window's temporal basis rows, centred and whitened by the host
//                (sum_j z_j z_j^T = I), then row 0 of Lx^-T (the first basis column's weight, SIGNED only)
//   map          [NVOX]         canonical correlation per voxel
//   taps t*      [3][2R+1]      k_p(i) = exp(-u^2 / 2 sigma^2) (u / sigma)^p, u = i * voxel size in mm
//   coef         [NFILT][7]     response_k = sum_m coef[k][m] M_m, moments M in the order g xx yy zz xy xz yz
//                               (M_ab = sum_r g(r) r_a r_b / sigma^2 * in(v + r))
// Compile-time defines: NX NY NZ (grid), RX RY RZ (filter radii in voxels), NFILT (spatial filters: 4 or 7),
// NTEMP (temporal basis columns, 1..4), VOLUMETRIC (3D filters: a z pass; otherwise in-plane filters),
// SIGNED (map carries the sign of the first temporal column's weight), VEC (voxels per work-item in the solve: 1 or
// a vector width), PIVOT_EPS, JACOBI_SWEEPS.
// Samples outside the volume are zero (zero padding). The host keeps every index below 2^31 except the cache
// offsets, which are 64-bit.

#define NVOX (NX * NY * NZ)
#define NVOXP (((NVOX + VEC - 1) / VEC) * VEC)  // per-filter stride in `responses`: whole VEC-voxel groups
#define NMOM 7
#define TAP(t, R, p, i) t[(p) * (2 * (R) + 1) + (i) + (R)]

inline void write_responses(__global float* restrict out, const ulong base, const int v, const float m[NMOM],
                            __constant float* restrict coef) {
#pragma unroll
  for (int k = 0; k < NFILT; ++k) {
    float r = 0.0f;
#pragma unroll
    for (int i = 0; i < NMOM; ++i) r = fma(coef[k * NMOM + i], m[i], r);
    out[base + (ulong)k * NVOXP + v] = r;
  }
}

// The baseline volume subtracted before filtering (non-finite voxels become 0). NDRange (NVOX).
__kernel void cca_set_baseline(__global const float* restrict in, const ulong offset,
                               __global float* restrict baseline) {
  const int v = get_global_id(0);
  if (v >= NVOX) return;
  const float s = in[offset + v];
  baseline[v] = isfinite(s) ? s : 0.0f;
}

// x pass of one volume minus the baseline: the three 1D moments along x. NDRange (NX, NY, NZ).
__kernel void cca_moments_x(__global const float* restrict in, const ulong offset,
                            __global const float* restrict baseline, __global float* restrict xmom,
                            __constant float* restrict tx) {
  const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  if (x >= NX || y >= NY || z >= NZ) return;
  const int v = (z * NY + y) * NX + x;
  __global const float* row = in + offset + (ulong)(v - x);
  __global const float* base = baseline + (v - x);
  float m0 = 0.0f, m1 = 0.0f, m2 = 0.0f;
#pragma unroll
  for (int i = -RX; i <= RX; ++i) {
    const int xi = x + i;
    const float s = (xi >= 0 && xi < NX) ? row[xi] - base[xi] : 0.0f;
    m0 = fma(TAP(tx, RX, 0, i), s, m0);
    m1 = fma(TAP(tx, RX, 1, i), s, m1);
    m2 = fma(TAP(tx, RX, 2, i), s, m2);
  }
  xmom[v] = m0;
  xmom[NVOX + v] = m1;
  xmom[2 * NVOX + v] = m2;
}

// y pass. In-plane filters: the last pass, writes the NFILT responses at out_offset. VOLUMETRIC: writes the six xy
// moments to `out` (out_offset unused). NDRange (NX, NY, NZ).
__kernel void cca_moments_y(__global const float* restrict xmom, __global float* restrict out, const ulong out_offset,
                            __constant float* restrict ty, __constant float* restrict coef) {
  const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  if (x >= NX || y >= NY || z >= NZ) return;
  const int v = (z * NY + y) * NX + x;
  float a00 = 0.0f, a20 = 0.0f, a02 = 0.0f, a11 = 0.0f;
#ifdef VOLUMETRIC
  float a10 = 0.0f, a01 = 0.0f;
#endif
#pragma unroll
  for (int j = -RY; j <= RY; ++j) {
    const int yj = y + j;
    const bool ok = yj >= 0 && yj < NY;
    const int u = v + j * NX;
    const float s0 = ok ? xmom[u] : 0.0f;
    const float s1 = ok ? xmom[NVOX + u] : 0.0f;
    const float s2 = ok ? xmom[2 * NVOX + u] : 0.0f;
    const float k0 = TAP(ty, RY, 0, j), k1 = TAP(ty, RY, 1, j), k2 = TAP(ty, RY, 2, j);
    a00 = fma(k0, s0, a00);
    a20 = fma(k0, s2, a20);
    a02 = fma(k2, s0, a02);
    a11 = fma(k1, s1, a11);
#ifdef VOLUMETRIC
    a10 = fma(k0, s1, a10);
    a01 = fma(k1, s0, a01);
#endif
  }
#ifdef VOLUMETRIC
  (void)out_offset;
  (void)coef;
  out[v] = a00;
  out[NVOX + v] = a10;
  out[2 * NVOX + v] = a01;
  out[3 * NVOX + v] = a20;
  out[4 * NVOX + v] = a02;
  out[5 * NVOX + v] = a11;
#else
  const float m[NMOM] = {a00, a20, a02, 0.0f, a11, 0.0f, 0.0f};
  write_responses(out, out_offset, v, m, coef);
#endif
}

#ifdef VOLUMETRIC
// z pass (3D filters): the seven moments, combined into the NFILT responses at out_offset. NDRange (NX, NY, NZ).
__kernel void cca_moments_z(__global const float* restrict xymom, __global float* restrict out, const ulong out_offset,
                            __constant float* restrict tz, __constant float* restrict coef) {
  const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  if (x >= NX || y >= NY || z >= NZ) return;
  const int v = (z * NY + y) * NX + x;
  float g = 0.0f, xx = 0.0f, yy = 0.0f, zz = 0.0f, xy = 0.0f, xz = 0.0f, yz = 0.0f;
#pragma unroll
  for (int k = -RZ; k <= RZ; ++k) {
    const int zk = z + k;
    const bool ok = zk >= 0 && zk < NZ;
    const int u = v + k * NX * NY;
    const float b00 = ok ? xymom[u] : 0.0f;
    const float b10 = ok ? xymom[NVOX + u] : 0.0f;
    const float b01 = ok ? xymom[2 * NVOX + u] : 0.0f;
    const float b20 = ok ? xymom[3 * NVOX + u] : 0.0f;
    const float b02 = ok ? xymom[4 * NVOX + u] : 0.0f;
    const float b11 = ok ? xymom[5 * NVOX + u] : 0.0f;
    const float k0 = TAP(tz, RZ, 0, k), k1 = TAP(tz, RZ, 1, k), k2 = TAP(tz, RZ, 2, k);
    g = fma(k0, b00, g);
    xx = fma(k0, b20, xx);
    yy = fma(k0, b02, yy);
    zz = fma(k2, b00, zz);
    xy = fma(k0, b11, xy);
    xz = fma(k1, b10, xz);
    yz = fma(k1, b01, yz);
  }
  const float m[NMOM] = {g, xx, yy, zz, xy, xz, yz};
  write_responses(out, out_offset, v, m, coef);
}
#endif

// The solve works on VEC voxels per work-item: VEC = 1 on GPUs (one voxel per work-item), the native vector width on
// CPU devices (explicit floatN arithmetic: PoCL does not vectorise across work-items around the kernel's inner
// loops; 8x faster measured). Every decision is a per-lane select, so both forms run the same branch-free code.
#if VEC == 1
typedef float real;
typedef int mask_t;
#define VLOAD(p) (*(p))
#else
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
typedef CAT(float, VEC) real;
typedef CAT(int, VEC) mask_t;
#define VLOAD(p) CAT(vload, VEC)(0, (p))
#endif

// Largest eigenvalue and its unit eigenvector of the symmetric NTEMP x NTEMP matrix m (destroyed), per lane.
inline real top_eigen(real m[NTEMP][NTEMP], real u[NTEMP]) {
#if NTEMP == 1
  u[0] = (real)(1.0f);
  return m[0][0];
#elif NTEMP == 2
  const real a = m[0][0], b = m[0][1], d = m[1][1];
  const real hd = 0.5f * (a - d);
  const real lambda = 0.5f * (a + d) + sqrt(hd * hd + b * b);
  // Two expressions of the eigenvector; the longer one is the better conditioned.
  const real w0 = lambda - d, v1 = lambda - a;
  const mask_t second = w0 * w0 + b * b > b * b + v1 * v1;
  const real e0 = select(b, w0, second), e1 = select(v1, b, second);
  const real norm2 = e0 * e0 + e1 * e1;
  const mask_t zero = norm2 <= 0.0f;  // a multiple of the identity: any vector
  const real inv = rsqrt(select(norm2, (real)(1.0f), zero));
  u[0] = select(e0 * inv, (real)(1.0f), zero);
  u[1] = select(e1 * inv, (real)(0.0f), zero);
  return lambda;
#else
  // Cyclic Jacobi: JACOBI_SWEEPS sweeps of plane rotations (quadratic convergence; 6 sweeps reach float precision
  // for NTEMP <= 4). Columns of e are the eigenvectors.
  real e[NTEMP][NTEMP];
#pragma unroll
  for (int i = 0; i < NTEMP; ++i) {
#pragma unroll
    for (int j = 0; j < NTEMP; ++j) e[i][j] = (real)(i == j ? 1.0f : 0.0f);
  }
  for (int sweep = 0; sweep < JACOBI_SWEEPS; ++sweep) {
#pragma unroll
    for (int p = 0; p < NTEMP - 1; ++p) {
#pragma unroll
      for (int q = p + 1; q < NTEMP; ++q) {
        const real apq = m[p][q];
        const mask_t skip = fabs(apq) <= 1e-30f;  // already diagonal in this plane: no rotation
        const real theta = (m[q][q] - m[p][p]) / (2.0f * select(apq, (real)(1.0f), skip));
        const real t =
            select(copysign((real)(1.0f), theta) / (fabs(theta) + sqrt(theta * theta + 1.0f)), (real)(0.0f), skip);
        const real c = rsqrt(t * t + 1.0f), s = t * c;
#pragma unroll
        for (int k = 0; k < NTEMP; ++k) {  // columns p, q
          const real mkp = m[k][p], mkq = m[k][q];
          m[k][p] = c * mkp - s * mkq;
          m[k][q] = s * mkp + c * mkq;
        }
#pragma unroll
        for (int k = 0; k < NTEMP; ++k) {  // rows p, q
          const real mpk = m[p][k], mqk = m[q][k];
          m[p][k] = c * mpk - s * mqk;
          m[q][k] = s * mpk + c * mqk;
        }
#pragma unroll
        for (int k = 0; k < NTEMP; ++k) {
          const real ekp = e[k][p], ekq = e[k][q];
          e[k][p] = c * ekp - s * ekq;
          e[k][q] = s * ekp + c * ekq;
        }
      }
    }
  }
  real lambda = m[0][0];
#pragma unroll
  for (int k = 0; k < NTEMP; ++k) u[k] = e[k][0];
#pragma unroll
  for (int i = 1; i < NTEMP; ++i) {
    const mask_t larger = m[i][i] > lambda;
    lambda = select(lambda, m[i][i], larger);
#pragma unroll
    for (int k = 0; k < NTEMP; ++k) u[k] = select(u[k], e[k][i], larger);
  }
  return lambda;
#endif
}

// Per VEC voxels: covariances over the window's n volumes, then the restricted CCA. NDRange (NVOXP / VEC).
__kernel void cca_solve(__global const float* restrict responses, __global const int* restrict window_slot,
                        __global const float* restrict window_z, const int n, __global float* restrict map) {
  const int v = get_global_id(0) * VEC;
  if (v >= NVOX) return;

  // Sums of the responses shifted by the window's first sample (keeps the float sums of squares well conditioned),
  // of their products, and of their products with the whitened basis.
  real shift[NFILT], sy[NFILT], syy[NFILT][NFILT], syz[NFILT][NTEMP];
  const ulong first = (ulong)window_slot[0] * (NFILT * NVOXP) + v;
#pragma unroll
  for (int a = 0; a < NFILT; ++a) {
    shift[a] = VLOAD(responses + first + (ulong)a * NVOXP);
    sy[a] = (real)(0.0f);
#pragma unroll
    for (int b = 0; b < NFILT; ++b) syy[a][b] = (real)(0.0f);
#pragma unroll
    for (int t = 0; t < NTEMP; ++t) syz[a][t] = (real)(0.0f);
  }
  for (int j = 0; j < n; ++j) {
    const ulong base = (ulong)window_slot[j] * (NFILT * NVOXP) + v;
    real y[NFILT];
    float zt[NTEMP];
#pragma unroll
    for (int a = 0; a < NFILT; ++a) y[a] = VLOAD(responses + base + (ulong)a * NVOXP) - shift[a];
#pragma unroll
    for (int t = 0; t < NTEMP; ++t) zt[t] = window_z[j * NTEMP + t];
#pragma unroll
    for (int a = 0; a < NFILT; ++a) {
      sy[a] += y[a];
#pragma unroll
      for (int b = 0; b <= a; ++b) syy[a][b] = fma(y[a], y[b], syy[a][b]);
#pragma unroll
      for (int t = 0; t < NTEMP; ++t) syz[a][t] = fma(y[a], (real)(zt[t]), syz[a][t]);
    }
  }

  // Correlation matrix of the responses (unit diagonal) and their covariance with the whitened basis, scaled alike.
  // A response with no variance over the window (relative to its mean square) sets the voxel to 0.
  const float inv_n = 1.0f / (float)n;
  real d[NFILT];
  mask_t degenerate = (real)(0.0f) > (real)(1.0f);  // all false
#pragma unroll
  for (int a = 0; a < NFILT; ++a) {
    const real ss = syy[a][a] - sy[a] * sy[a] * inv_n;  // sum of squared deviations
    const real mean = shift[a] + sy[a] * inv_n;
    const real var = ss * inv_n;
    degenerate |= !(var > 1e-12f * (mean * mean + var));
    d[a] = rsqrt(fmax(ss, 1e-30f));
  }
  real r[NFILT][NFILT], q[NFILT][NTEMP];
#pragma unroll
  for (int a = 0; a < NFILT; ++a) {
#pragma unroll
    for (int b = 0; b <= a; ++b) r[a][b] = (syy[a][b] - sy[a] * sy[b] * inv_n) * d[a] * d[b];
#pragma unroll
    for (int t = 0; t < NTEMP; ++t) q[a][t] = syz[a][t] * d[a];
  }
#ifdef SIGNED
  float r0[NTEMP];
#pragma unroll
  for (int t = 0; t < NTEMP; ++t) r0[t] = window_z[n * NTEMP + t];
#endif

  // Restricted CCA: the maximum over filter subsets P whose unconstrained optimum has spatial weights of one sign
  // (all > 0, or all < 0, which flips with the temporal weights). Excluded filters become identity rows with no
  // covariance, so every subset runs the same unrolled NFILT x NFILT code; the mask is the same for every lane.
  real best = (real)(0.0f), best_sign = (real)(1.0f);
  for (int mask = 1; mask < (1 << NFILT); ++mask) {
    real l[NFILT][NFILT];
    mask_t ok = (real)(1.0f) > (real)(0.0f);  // all true
#pragma unroll
    for (int i = 0; i < NFILT; ++i) {
      const bool in_i = (mask >> i) & 1;
#pragma unroll
      for (int j = 0; j <= i; ++j) {
        const bool in_j = (mask >> j) & 1;
        real s = (in_i && in_j) ? r[i][j] : (real)(i == j ? 1.0f : 0.0f);
#pragma unroll
        for (int k = 0; k < j; ++k) s = fma(-l[i][k], l[j][k], s);
        if (i == j) {
          ok &= s > PIVOT_EPS;  // (near-)collinear responses: the smaller subsets cover this one
          l[i][i] = sqrt(fmax(s, PIVOT_EPS));
        } else {
          l[i][j] = s / l[j][j];
        }
      }
    }
    real f[NFILT][NTEMP];  // L^-1 Q (rows of excluded filters are 0)
#pragma unroll
    for (int i = 0; i < NFILT; ++i) {
      const bool in_i = (mask >> i) & 1;
#pragma unroll
      for (int t = 0; t < NTEMP; ++t) {
        real s = in_i ? q[i][t] : (real)(0.0f);
#pragma unroll
        for (int k = 0; k < i; ++k) s = fma(-l[i][k], f[k][t], s);
        f[i][t] = s / l[i][i];
      }
    }
    real m[NTEMP][NTEMP];  // F^T F: its largest eigenvalue is the subset's squared canonical correlation
#pragma unroll
    for (int t = 0; t < NTEMP; ++t) {
#pragma unroll
      for (int u = 0; u <= t; ++u) {
        real s = (real)(0.0f);
#pragma unroll
        for (int i = 0; i < NFILT; ++i) s = fma(f[i][t], f[i][u], s);
        m[t][u] = s;
        m[u][t] = s;
      }
    }
    real u[NTEMP];
    const real lambda = top_eigen(m, u);
    real w[NFILT];  // spatial weights L^-T F u (in units of each response's standard deviation)
    mask_t positive = ok, negative = ok;
#pragma unroll
    for (int i = NFILT - 1; i >= 0; --i) {
      real s = (real)(0.0f);
#pragma unroll
      for (int t = 0; t < NTEMP; ++t) s = fma(f[i][t], u[t], s);
#pragma unroll
      for (int k = i + 1; k < NFILT; ++k) s = fma(-l[k][i], w[k], s);
      w[i] = s / l[i][i];
      if ((mask >> i) & 1) {
        positive &= w[i] > 0.0f;
        negative &= w[i] < 0.0f;
      }
    }
    const mask_t better = (positive | negative) & (lambda > best);
    best = select(best, lambda, better);
#ifdef SIGNED
    real b0 = (real)(0.0f);  // weight of the first basis column, spatial weights made non-negative
#pragma unroll
    for (int t = 0; t < NTEMP; ++t) b0 = fma((real)(r0[t]), u[t], b0);
    b0 = select(b0, -b0, negative);
    best_sign = select(best_sign, select((real)(1.0f), (real)(-1.0f), b0 < 0.0f), better);
#endif
  }
  const real rho = select(best_sign * sqrt(clamp(best, 0.0f, 1.0f)), (real)(0.0f), degenerate);
#if VEC == 1
  map[v] = rho;
#else
  float out[VEC];
  CAT(vstore, VEC)(rho, 0, out);
#pragma unroll
  for (int lane = 0; lane < VEC; ++lane) {
    if (v + lane < NVOX) map[v + lane] = out[lane];
  }
#endif
}
