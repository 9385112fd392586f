// General linear model on the device (docs/algorithms/glm.md): compensated accumulation of X'y and y'y over a list
// of volumes, then per voxel the estimates, residual variance, contrasts, t and F.
//
// Memory layout (V = voxels per volume, P = design columns):
//   volumes  float [slot][V]: a ring buffer's data or a contiguous series (slot = volume's position in it)
//   slots    int [count]: the slot of each volume to add, in time order
//   prev     int [count]: the slot of the previous volume of the series (AR(1) whitening), -1 where there is none
//   rows     float [count][P]: the design row of each volume, already whitened like the data
//   shift    float [V]: per-voxel constant subtracted from y before accumulating (keeps float sums accurate)
//   acc, comp  float [P + 1][V]: Kahan sums and their compensations; rows 0..P-1 are X'y, row P is y'y
//   pinv     float [2][P][P]: pinv(X'X) (host), row-major, as hi then lo parts (value = hi + lo)
//   tcon     float [K][P]: t-contrast weights; tvar float [K]: c' pinv c (host)
//   fmat     float [F][Q][P] and fmid float [F][Q][Q]: F-contrast rows C and (C pinv C')^-1, Q rows each (padded
//            with zero rows; fq int [F] says how many are used)
//   beta     float [P][V]; sigma2 float [V]; con, t float [K][V]; fstat float [F][V]
// Compile-time defines: P (columns), K (t contrasts, may be 0), NF (F contrasts, may be 0), Q (max rows of an F
// contrast), CONST_COL (index of the constant column, -1 for none: the shift is then 0), COMPENSATED (1: Kahan sums;
// 0: plain float sums, ~10x less accurate), TABLES_SPACE (__constant when slots, prev and rows fit the constant
// cache, which broadcasts them to every work-item; else __global).

// The small per-voxel solve runs in double where the device has it (NVIDIA, PoCL), else in float: the accumulators
// are read as sum - compensation and pinv arrives as hi + lo float pairs, so double keeps ~1e-10 of their precision.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif

#ifndef P
#define P 1
#endif
#ifndef K
#define K 0
#endif
#ifndef NF
#define NF 0
#endif
#ifndef Q
#define Q 1
#endif
#ifndef CONST_COL
#define CONST_COL -1
#endif
#ifndef COMPENSATED
#define COMPENSATED 1
#endif
#ifndef TABLES_SPACE
#define TABLES_SPACE __global
#endif

// acc[t][v] += value with Kahan compensation (comp holds the running low-order error).
inline void kahan_add(float* sum, float* c, float value) {
  const float y = value - *c;
  const float t = *sum + y;
  *c = (t - *sum) - y;
  *sum = t;
}

// Adds `count` volumes to the accumulators. NDRange: 1D over voxels.
__kernel void glm_accumulate(__global const float* volumes, TABLES_SPACE const int* slots, TABLES_SPACE const int* prev,
                             TABLES_SPACE const float* rows, const int count, const int voxels, const float rho,
                             const float first_scale, __global const float* shift, __global float* acc,
                             __global float* comp) {
  const int v = get_global_id(0);
  if (v >= voxels) return;
  float s[P + 1], c[P + 1];
  for (int j = 0; j <= P; ++j) {
    s[j] = acc[(size_t)j * voxels + v];
    c[j] = comp[(size_t)j * voxels + v];
  }
  const float sh = shift[v];
  for (int k = 0; k < count; ++k) {
    const float y = volumes[(size_t)slots[k] * voxels + v] - sh;
    const int p = prev[k];
    // AR(1) prewhitening (rho = 0: plain OLS): y_t - rho y_(t-1), or sqrt(1 - rho^2) y_t at the start of a series.
    const float w = p >= 0 ? y - rho * (volumes[(size_t)p * voxels + v] - sh) : first_scale * y;
    TABLES_SPACE const float* x = rows + (size_t)k * P;
#if COMPENSATED
    for (int j = 0; j < P; ++j) kahan_add(&s[j], &c[j], x[j] * w);
    kahan_add(&s[P], &c[P], w * w);
#else
    for (int j = 0; j < P; ++j) s[j] += x[j] * w;
    s[P] += w * w;
#endif
  }
  for (int j = 0; j <= P; ++j) {
    acc[(size_t)j * voxels + v] = s[j];
    comp[(size_t)j * voxels + v] = c[j];
  }
}

// Per voxel: beta = pinv X'y, sigma2 = (y'y - beta'X'y) / dof, contrasts, t, F. Undefined statistics (dof <= 0,
// sigma2 <= 0, outside the mask) are NaN. NDRange: 1D over voxels.
__kernel void glm_solve(__global const float* acc, __global const float* comp, const int voxels,
                        __global const float* pinv, __global const float* shift, const float dof,
                        __global const uchar* mask, const int use_mask, __global const float* tcon,
                        __global const float* tvar, __global const float* fmat, __global const float* fmid,
                        __global const int* fq, __global float* beta, __global float* sigma2, __global float* con,
                        __global float* t, __global float* fstat) {
  const int v = get_global_id(0);
  if (v >= voxels) return;
  const float nan_value = NAN;
  if (use_mask && mask[v] == 0) {
    for (int j = 0; j < P; ++j) beta[(size_t)j * voxels + v] = nan_value;
    sigma2[v] = nan_value;
    for (int k = 0; k < K; ++k) {
      con[(size_t)k * voxels + v] = nan_value;
      t[(size_t)k * voxels + v] = nan_value;
    }
    for (int f = 0; f < NF; ++f) fstat[(size_t)f * voxels + v] = nan_value;
    return;
  }
  real b[P], est[P];
  for (int j = 0; j < P; ++j) b[j] = (real)acc[(size_t)j * voxels + v] - (real)comp[(size_t)j * voxels + v];
  const real yy = (real)acc[(size_t)P * voxels + v] - (real)comp[(size_t)P * voxels + v];
  real explained = 0;
  for (int i = 0; i < P; ++i) {
    real sum = 0;
    for (int j = 0; j < P; ++j) sum += ((real)pinv[i * P + j] + (real)pinv[P * P + i * P + j]) * b[j];
    est[i] = sum;
    explained += sum * b[i];
  }
  const real residual = yy - explained;
  const float s2 = dof > 0.0f ? (float)(fmax(residual, (real)0) / dof) : nan_value;
  sigma2[v] = s2;
#if CONST_COL >= 0
  est[CONST_COL] += shift[v];  // undo the shift: it only moved the constant's estimate
#endif
  for (int j = 0; j < P; ++j) beta[(size_t)j * voxels + v] = (float)est[j];
  const int defined = s2 > 0.0f;
  for (int k = 0; k < K; ++k) {
    real ce = 0;
    for (int j = 0; j < P; ++j) ce += tcon[k * P + j] * est[j];
    // tvar <= 0: the contrast is not estimable from this design (yet): no estimate, no t.
    con[(size_t)k * voxels + v] = tvar[k] > 0.0f ? (float)ce : nan_value;
    t[(size_t)k * voxels + v] = defined && tvar[k] > 0.0f ? (float)(ce / sqrt((real)s2 * tvar[k])) : nan_value;
  }
  for (int f = 0; f < NF; ++f) {
    const int q = fq[f];
    real cb[Q];
    for (int r = 0; r < Q; ++r) {
      real sum = 0;
      for (int j = 0; j < P; ++j) sum += fmat[((size_t)f * Q + r) * P + j] * est[j];
      cb[r] = sum;
    }
    real quad = 0;
    for (int r = 0; r < Q; ++r) {
      for (int s = 0; s < Q; ++s) quad += cb[r] * fmid[((size_t)f * Q + r) * Q + s] * cb[s];
    }
    fstat[(size_t)f * voxels + v] = defined && q > 0 ? (float)(quad / (q * (real)s2)) : nan_value;
  }
}
