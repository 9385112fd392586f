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
// cache, which broadcasts them to every work-item; else __global), VEC (voxels per work-item: 1, 2, 4, 8 or 16).

// The small per-voxel solve runs in double where the device has it (NVIDIA, PoCL), else in float: the accumulators
// are read as sum - compensation and pinv arrives as hi + lo float pairs, so double keeps ~1e-10 of their precision.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define REAL_NAME double
#else
#define REAL_NAME float
#endif
typedef REAL_NAME real;

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
#ifndef VEC
#define VEC 1
#endif

// Lanes: VEC consecutive voxels per work-item (1 on GPUs; 4-16 on CPU devices, where PoCL vectorises only what the
// kernel spells out). vfloat/vreal are float/real or their VEC-wide vectors; loads and stores of the last, partial
// group of voxels go element by element.
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VEC == 1
typedef float vfloat;
typedef real vreal;
typedef int vint;
#define TO_VREAL(x) ((real)(x))
#define TO_VFLOAT(x) ((float)(x))
#define SELECT(a, b, c) ((c) ? (b) : (a))
#else
typedef CAT(float, VEC) vfloat;
typedef CAT(REAL_NAME, VEC) vreal;
typedef CAT(int, VEC) vint;
#ifdef cl_khr_fp64
#define TO_VREAL(x) CAT(convert_double, VEC)(x)
#else
#define TO_VREAL(x) (x)
#endif
#define TO_VFLOAT(x) CAT(convert_float, VEC)(x)
#define SELECT(a, b, c) select((a), (b), (c))
#endif

// VEC voxels starting at v0 of a [.][voxels] float array row starting at `base`.
inline vfloat load_lanes(__global const float* base, int v0, int voxels) {
#if VEC == 1
  return base[v0];
#else
  if (v0 + VEC <= voxels) return CAT(vload, VEC)(0, base + v0);
  float tmp[VEC];
  for (int i = 0; i < VEC; ++i) tmp[i] = v0 + i < voxels ? base[v0 + i] : 0.0f;
  return CAT(vload, VEC)(0, tmp);
#endif
}

inline void store_lanes(vfloat x, __global float* base, int v0, int voxels) {
#if VEC == 1
  base[v0] = x;
#else
  if (v0 + VEC <= voxels) {
    CAT(vstore, VEC)(x, 0, base + v0);
    return;
  }
  float tmp[VEC];
  CAT(vstore, VEC)(x, 0, tmp);
  for (int i = 0; i < VEC && v0 + i < voxels; ++i) base[v0 + i] = tmp[i];
#endif
}

// Mask bytes as a lane condition (-1 true for vectors, 1 for scalars); voxels past the end count as outside.
inline vint mask_lanes(__global const uchar* mask, int v0, int voxels) {
#if VEC == 1
  return mask[v0] != 0;
#else
  int tmp[VEC];
  for (int i = 0; i < VEC; ++i) tmp[i] = v0 + i < voxels && mask[v0 + i] != 0 ? -1 : 0;
  return CAT(vload, VEC)(0, tmp);
#endif
}

// sum += value with Kahan compensation (c holds the running low-order error).
inline void kahan_add(vfloat* sum, vfloat* c, vfloat value) {
  const vfloat y = value - *c;
  const vfloat t = *sum + y;
  *c = (t - *sum) - y;
  *sum = t;
}

// Adds `count` volumes to the accumulators. NDRange: 1D over ceil(voxels / VEC) work-items.
__kernel void glm_accumulate(__global const float* volumes, TABLES_SPACE const int* slots, TABLES_SPACE const int* prev,
                             TABLES_SPACE const float* rows, const int count, const int voxels, const float rho,
                             const float first_scale, __global const float* shift, __global float* acc,
                             __global float* comp) {
  const int v0 = get_global_id(0) * VEC;
  if (v0 >= voxels) return;
  vfloat s[P + 1], c[P + 1];
  for (int j = 0; j <= P; ++j) {
    s[j] = load_lanes(acc + (size_t)j * voxels, v0, voxels);
    c[j] = load_lanes(comp + (size_t)j * voxels, v0, voxels);
  }
  const vfloat sh = load_lanes(shift, v0, voxels);
#pragma unroll 4
  for (int k = 0; k < count; ++k) {
    const vfloat y = load_lanes(volumes + (size_t)slots[k] * voxels, v0, voxels) - sh;
    const int p = prev[k];
    // AR(1) prewhitening (rho = 0: plain OLS): y_t - rho y_(t-1), or sqrt(1 - rho^2) y_t at the start of a series.
    const vfloat w = p >= 0 ? y - rho * (load_lanes(volumes + (size_t)p * voxels, v0, voxels) - sh) : first_scale * y;
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
    store_lanes(s[j], acc + (size_t)j * voxels, v0, voxels);
    store_lanes(c[j], comp + (size_t)j * voxels, v0, voxels);
  }
}

// Per voxel: beta = pinv X'y, sigma2 = (y'y - beta'X'y) / dof, contrasts, t, F. Undefined statistics (dof <= 0,
// sigma2 <= 0, outside the mask) are NaN. NDRange: 1D over ceil(voxels / VEC) work-items.
__kernel void glm_solve(__global const float* acc, __global const float* comp, const int voxels,
                        __global const float* pinv, __global const float* shift, const float dof,
                        __global const uchar* mask, const int use_mask, __global const float* tcon,
                        __global const float* tvar, __global const float* fmat, __global const float* fmid,
                        __global const int* fq, __global float* beta, __global float* sigma2, __global float* con,
                        __global float* t, __global float* fstat) {
  const int v0 = get_global_id(0) * VEC;
  if (v0 >= voxels) return;
  const vfloat nan_value = (vfloat)(NAN);
  // Lanes outside the mask get NaN outputs (all lanes are computed, then selected).
  const vint inside = use_mask ? mask_lanes(mask, v0, voxels) : (vint)(VEC == 1 ? 1 : -1);
  vreal b[P], est[P];
  for (int j = 0; j < P; ++j) {
    b[j] = TO_VREAL(load_lanes(acc + (size_t)j * voxels, v0, voxels)) -
           TO_VREAL(load_lanes(comp + (size_t)j * voxels, v0, voxels));
  }
  const vreal yy = TO_VREAL(load_lanes(acc + (size_t)P * voxels, v0, voxels)) -
                   TO_VREAL(load_lanes(comp + (size_t)P * voxels, v0, voxels));
  vreal explained = 0;
  for (int i = 0; i < P; ++i) {
    vreal sum = 0;
    for (int j = 0; j < P; ++j) sum += ((real)pinv[i * P + j] + (real)pinv[P * P + i * P + j]) * b[j];
    est[i] = sum;
    explained += sum * b[i];
  }
  const vreal residual = yy - explained;
  const vfloat s2_raw = dof > 0.0f ? TO_VFLOAT(fmax(residual, (vreal)0) / dof) : nan_value;
  const vfloat s2 = SELECT(nan_value, s2_raw, inside);
  store_lanes(s2, sigma2, v0, voxels);
#if CONST_COL >= 0
  est[CONST_COL] += TO_VREAL(load_lanes(shift, v0, voxels));  // undo the shift: it only moved the constant's estimate
#endif
  for (int j = 0; j < P; ++j)
    store_lanes(SELECT(nan_value, TO_VFLOAT(est[j]), inside), beta + (size_t)j * voxels, v0, voxels);
  const vint defined = s2 > 0.0f;  // false for NaN (outside the mask, no dof)
  for (int k = 0; k < K; ++k) {
    vreal ce = 0;
    for (int j = 0; j < P; ++j) ce += tcon[k * P + j] * est[j];
    // tvar <= 0: the contrast is not estimable from this design (yet): no estimate, no t.
    const int estimable = tvar[k] > 0.0f;
    const vfloat estimate = estimable ? TO_VFLOAT(ce) : nan_value;
    store_lanes(SELECT(nan_value, estimate, inside), con + (size_t)k * voxels, v0, voxels);
    const vfloat tk = estimable ? TO_VFLOAT(ce / sqrt(TO_VREAL(s2) * tvar[k])) : nan_value;
    store_lanes(SELECT(nan_value, tk, defined), t + (size_t)k * voxels, v0, voxels);
  }
  for (int f = 0; f < NF; ++f) {
    const int q = fq[f];
    vreal cb[Q];
    for (int r = 0; r < Q; ++r) {
      vreal sum = 0;
      for (int j = 0; j < P; ++j) sum += fmat[((size_t)f * Q + r) * P + j] * est[j];
      cb[r] = sum;
    }
    vreal quad = 0;
    for (int r = 0; r < Q; ++r) {
      for (int s = 0; s < Q; ++s) quad += cb[r] * fmid[((size_t)f * Q + r) * Q + s] * cb[s];
    }
    const vfloat fv = q > 0 ? TO_VFLOAT(quad / (q * TO_VREAL(s2))) : nan_value;
    store_lanes(SELECT(nan_value, fv, defined), fstat + (size_t)f * voxels, v0, voxels);
  }
}
