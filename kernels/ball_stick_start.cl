// The ball-and-stick sampler's starting state of every voxel, one work-item per voxel, in double: the steps of the
// host's initialise_ball_stick (core/diffusion/ball_stick_init.cpp, the double reference; docs/algorithms/bedpost.md):
// (a) the log-linear tensor fit (ordinary, then weighted least squares on log S over the measurements with finite
// S > 0), (b) Levenberg-Marquardt fits of the ball-and-stick model (model 1 from the "direct" start, the "nested"
// chain where the direct fit collapsed two sticks, then model 2 from model 1), (c) mcmc_ready's bounds and order.
// Differences from the host, all within rounding on well-posed voxels: the least-squares problems are solved by
// Cholesky factors of the column-scaled normal equations (the host: pivoted QR), the tensor's eigenvectors come from
// cyclic Jacobi rotations (the host: Eigen's solver), and every eigenvector is signed so that its largest component is
// positive (as the host's fit_tensor does), so both start from the same axes.
// Parameter vector x: 0 log S0, 1 log d, fibre j at 2 + 3j: th, ph, t (f_j = sin^2 t_j * prod_{k<j} cos^2 t_k),
// model 2: log d_std last (2 + 3 NF).
// Memory layout (V voxels, n measurements, NQ = 13 quantities in the sampler's order: S0, d, d_std, tau, then th, ph, f
// of fibres 0..2):
//   y        float [n][V]     the measurements
//   scheme   double [n][4]    b, gx, gy, gz
//   state    double [NQ][V]   the starting state (quantities of fibres >= NF: 0)
//   fitted   uchar [V]        1: fitted; 0: the neutral state (no usable fit)
// Defines: NF fibres (1..3), MODEL (1|2), B0_THRESHOLD (b at or below it counts as b = 0).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define NQ 13
#define MAXP (2 + 3 * 3 + 1)
#define MAX_ITERATIONS 100
#define RELATIVE_TOLERANCE 1e-8
#define MIN_D 1e-5
#define MAX_D (0.999 * 0.005)
#define MIN_DSTD 1e-5
#define MAX_DSTD 0.01
#define MIN_F 0.01
#define MAX_F 0.9
#define MAX_FSUM 0.95

#define TH(j) (2 + 3 * (j))
#define PH(j) (3 + 3 * (j))
#define T(j) (4 + 3 * (j))
#define LOG_DSTD(fibres) (2 + 3 * (fibres))

inline int param_count(const int fibres, const int model) {
  return 2 + 3 * fibres + (model == 2 ? 1 : 0);
}

// ---- small dense algebra on private arrays ----

// Solves a x = rhs for a symmetric positive definite k x k `a` (row-major, stride MAXP; overwritten by its Cholesky
// factor) after scaling it to a unit diagonal. False when a pivot of the scaled matrix is below min_pivot or not
// finite (rank deficient, or not positive definite).
bool cholesky_solve(double* a, const double* rhs, double* x, const int k, const double min_pivot) {
  double root[MAXP];
  for (int r = 0; r < k; ++r) {
    if (!(a[r * MAXP + r] > 0.0)) return false;
    root[r] = sqrt(a[r * MAXP + r]);
  }
  for (int r = 0; r < k; ++r) {
    for (int c = 0; c <= r; ++c) a[r * MAXP + c] /= root[r] * root[c];
  }
  for (int c = 0; c < k; ++c) {
    double pivot = a[c * MAXP + c];
    for (int m = 0; m < c; ++m) pivot -= a[c * MAXP + m] * a[c * MAXP + m];
    if (!(pivot > min_pivot) || !isfinite(pivot)) return false;
    const double l = sqrt(pivot);
    a[c * MAXP + c] = l;
    for (int r = c + 1; r < k; ++r) {
      double sum = a[r * MAXP + c];
      for (int m = 0; m < c; ++m) sum -= a[r * MAXP + m] * a[c * MAXP + m];
      a[r * MAXP + c] = sum / l;
    }
  }
  for (int r = 0; r < k; ++r) {  // L z = D^-1/2 rhs
    double sum = rhs[r] / root[r];
    for (int m = 0; m < r; ++m) sum -= a[r * MAXP + m] * x[m];
    x[r] = sum / a[r * MAXP + r];
  }
  for (int r = k - 1; r >= 0; --r) {  // L' w = z, x = D^-1/2 w
    double sum = x[r];
    for (int m = r + 1; m < k; ++m) sum -= a[m * MAXP + r] * x[m];
    x[r] = sum / a[r * MAXP + r];
  }
  bool finite = true;
  for (int r = 0; r < k; ++r) {
    x[r] /= root[r];
    finite = finite && isfinite(x[r]);
  }
  return finite;
}

// Eigenvalues (descending) and unit eigenvectors (vectors[k] of values[k]) of a symmetric 3 x 3 matrix m (row-major):
// cyclic Jacobi rotations until the off-diagonal part is below 1e-15 of the norm (or 50 sweeps).
void symmetric_eigen3(const double* m, double* values, double vectors[3][3]) {
  double a[3][3], v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  double norm = 0.0;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      a[r][c] = m[3 * r + c];
      norm += a[r][c] * a[r][c];
    }
  }
  for (int sweep = 0; sweep < 50; ++sweep) {
    const double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    if (!(off > 1e-30 * norm)) break;
    for (int p = 0; p < 2; ++p) {
      for (int q = p + 1; q < 3; ++q) {
        if (a[p][q] == 0.0) continue;
        // The rotation (c, s) that zeroes a[p][q]: t = sgn(theta) / (|theta| + sqrt(theta^2 + 1)).
        const double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
        const double t = (theta >= 0.0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
        const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
        for (int k = 0; k < 3; ++k) {  // a = a J (columns p, q)
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (int k = 0; k < 3; ++k) {  // a = J' a (rows p, q)
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (int k = 0; k < 3; ++k) {  // v = v J: the columns are the eigenvectors
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
    }
  }
  int order[3] = {0, 1, 2};
  for (int i = 1; i < 3; ++i) {  // descending by eigenvalue
    for (int j = i; j > 0 && a[order[j]][order[j]] > a[order[j - 1]][order[j - 1]]; --j) {
      const int swap = order[j];
      order[j] = order[j - 1];
      order[j - 1] = swap;
    }
  }
  for (int k = 0; k < 3; ++k) {
    const int col = order[k];
    values[k] = a[col][col];
    int largest = 0;  // sign: the largest component positive
    for (int r = 1; r < 3; ++r) largest = fabs(v[r][col]) > fabs(v[largest][col]) ? r : largest;
    const double sign = v[largest][col] < 0.0 ? -1.0 : 1.0;
    for (int r = 0; r < 3; ++r) vectors[k][r] = sign * v[r][col];
  }
}

// ---- the tensor ----

typedef struct {
  double s0, md, fa;
  double e[3][3];  // unit eigenvectors, largest eigenvalue first
} Tensor;

// Least squares of log S on the tensor's design over the measurements with finite S > 0, weighted by w_i =
// exp(2 (prediction_i - max prediction)) when `prediction` is given. False when fewer than 7 such measurements or the
// design is rank deficient.
bool tensor_least_squares(global const float* y, const int voxels, const int v, global const double* scheme,
                          const int n, const double* beta_ols, double* beta) {
  double ata[7 * MAXP], atb[7];
  for (int r = 0; r < 7; ++r) {
    atb[r] = 0.0;
    for (int c = 0; c < 7; ++c) ata[r * MAXP + c] = 0.0;
  }
  double max_prediction = -INFINITY;
  if (beta_ols != 0) {
    for (int i = 0; i < n; ++i) {
      const double s = (double)y[(size_t)i * voxels + v];
      if (!(s > 0.0) || !isfinite(s)) continue;
      const double b = scheme[4 * i], gx = scheme[4 * i + 1], gy = scheme[4 * i + 2], gz = scheme[4 * i + 3];
      const double row[7] = {
          1.0, -b * gx * gx, -b * gy * gy, -b * gz * gz, -2.0 * b * gx * gy, -2.0 * b * gx * gz, -2.0 * b * gy * gz};
      double prediction = 0.0;
      for (int c = 0; c < 7; ++c) prediction += row[c] * beta_ols[c];
      max_prediction = fmax(max_prediction, prediction);
    }
  }
  int used = 0;
  for (int i = 0; i < n; ++i) {
    const double s = (double)y[(size_t)i * voxels + v];
    if (!(s > 0.0) || !isfinite(s)) continue;
    ++used;
    const double b = scheme[4 * i], gx = scheme[4 * i + 1], gy = scheme[4 * i + 2], gz = scheme[4 * i + 3];
    const double row[7] = {
        1.0, -b * gx * gx, -b * gy * gy, -b * gz * gz, -2.0 * b * gx * gy, -2.0 * b * gx * gz, -2.0 * b * gy * gz};
    double w = 1.0;
    if (beta_ols != 0) {
      double prediction = 0.0;
      for (int c = 0; c < 7; ++c) prediction += row[c] * beta_ols[c];
      w = exp(2.0 * (prediction - max_prediction));
    }
    const double log_s = log(s);
    for (int r = 0; r < 7; ++r) {
      atb[r] += w * row[r] * log_s;
      for (int c = 0; c <= r; ++c) ata[r * MAXP + c] += w * row[r] * row[c];
    }
  }
  if (used < 7) return false;
  return cholesky_solve(ata, atb, beta, 7, 1e-13);
}

bool fit_tensor(global const float* y, const int voxels, const int v, global const double* scheme, const int n,
                Tensor* t) {
  double ols[7], wls[7];
  if (!tensor_least_squares(y, voxels, v, scheme, n, 0, ols)) return false;
  if (!tensor_least_squares(y, voxels, v, scheme, n, ols, wls)) return false;
  const double m[9] = {wls[1], wls[4], wls[5], wls[4], wls[2], wls[6], wls[5], wls[6], wls[3]};
  double values[3];
  symmetric_eigen3(m, values, t->e);
  t->s0 = exp(wls[0]);
  t->md = (values[0] + values[1] + values[2]) / 3.0;
  const double norm = sqrt(values[0] * values[0] + values[1] * values[1] + values[2] * values[2]);
  const double d0 = values[0] - t->md, d1 = values[1] - t->md, d2 = values[2] - t->md;
  t->fa = norm > 0.0 ? sqrt(1.5) * sqrt(d0 * d0 + d1 * d1 + d2 * d2) / norm : 0.0;
  return isfinite(t->s0) && isfinite(t->md) && isfinite(t->fa) && t->s0 > 0.0;
}

// ---- the model ----

// The fractions of x's t's and df_j/dt_k (lower triangular).
void fractions(const double* x, const int fibres, double* f, double df_dt[3][3]) {
  double s[3], ds[3];
  for (int j = 0; j < fibres; ++j) {
    const double t = x[T(j)];
    s[j] = sin(t) * sin(t);
    ds[j] = sin(2.0 * t);
  }
  for (int j = 0; j < 3; ++j) {
    for (int k = 0; k < 3; ++k) df_dt[j][k] = 0.0;
  }
  for (int j = 0; j < fibres; ++j) {
    double rest = 1.0;
    for (int k = 0; k < j; ++k) rest *= 1.0 - s[k];
    f[j] = s[j] * rest;
    df_dt[j][j] = ds[j] * rest;
    for (int k = 0; k < j; ++k) {
      double others = 1.0;
      for (int m = 0; m < j; ++m) {
        if (m != k) others *= 1.0 - s[m];
      }
      df_dt[j][k] = -s[j] * ds[k] * others;
    }
  }
}

// What a point x gives every measurement: S0, d, d_std, the fractions and the sticks' trigonometry.
typedef struct {
  int fibres, model;
  double s0, d, s, fsum;
  double f[3], df_dt[3][3];
  double st[3], ct[3], sp[3], cp[3];
} Point;

Point make_point(const double* x, const int fibres, const int model) {
  Point p;
  p.fibres = fibres;
  p.model = model;
  p.s0 = exp(x[0]);
  p.d = exp(x[1]);
  p.s = model == 2 ? exp(x[LOG_DSTD(fibres)]) : 0.0;
  fractions(x, fibres, p.f, p.df_dt);
  p.fsum = 0.0;
  for (int j = 0; j < fibres; ++j) {
    p.fsum += p.f[j];
    p.st[j] = sin(x[TH(j)]);
    p.ct[j] = cos(x[TH(j)]);
    p.sp[j] = sin(x[PH(j)]);
    p.cp[j] = cos(x[PH(j)]);
  }
  return p;
}

// A compartment's attenuation at b for xs = 1 (ball) or (g . v)^2 (stick), and its derivatives with respect to log d
// (log_d), log d_std (log_s) and xs (dx). Model 2 in the log1p form that tends smoothly to model 1 as d_std -> 0.
double compartment(const Point* p, const double b, const double xs, double* log_d, double* log_s, double* dx) {
  if (p->model == 1) {
    const double a = exp(-p->d * b * xs);
    *log_d = -p->d * b * xs * a;
    *log_s = 0.0;
    *dx = -p->d * b * a;
    return a;
  }
  const double u = p->d * p->d / (p->s * p->s);
  const double k = b * xs * (p->s * p->s / p->d);
  const double l = log1p(k);
  const double a = exp(-u * l);
  const double bdx = p->d * b * xs / (1.0 + k);
  *log_d = a * (-2.0 * u * l + bdx);
  *log_s = a * (2.0 * u * l - 2.0 * bdx);
  *dx = -p->d * a * b / (1.0 + k);
  return a;
}

// The signal of measurement i at p and, when jac is not null, its derivatives with respect to x.
double model_signal(const Point* p, global const double* scheme, const int i, double* jac) {
  const double b = scheme[4 * i], gx = scheme[4 * i + 1], gy = scheme[4 * i + 2], gz = scheme[4 * i + 3];
  double log_d, log_s, dx;
  const double ball = compartment(p, b, 1.0, &log_d, &log_s, &dx);
  double inner = (1.0 - p->fsum) * ball;
  double sum_log_d = (1.0 - p->fsum) * log_d, sum_log_s = (1.0 - p->fsum) * log_s;
  double ds_df[3];
  for (int j = 0; j < p->fibres; ++j) {
    const double dot = gx * (p->st[j] * p->cp[j]) + gy * (p->st[j] * p->sp[j]) + gz * p->ct[j];
    const double a = compartment(p, b, dot * dot, &log_d, &log_s, &dx);
    inner += p->f[j] * a;
    if (jac == 0) continue;
    sum_log_d += p->f[j] * log_d;
    sum_log_s += p->f[j] * log_s;
    const double common = (2.0 * p->s0 * p->f[j]) * dx * dot;
    jac[TH(j)] = common * (gx * (p->ct[j] * p->cp[j]) + gy * (p->ct[j] * p->sp[j]) - gz * p->st[j]);
    jac[PH(j)] = common * (gy * (p->st[j] * p->cp[j]) - gx * (p->st[j] * p->sp[j]));
    ds_df[j] = p->s0 * (a - ball);
  }
  const double signal = p->s0 * inner;
  if (jac == 0) return signal;
  jac[0] = signal;
  jac[1] = p->s0 * sum_log_d;
  if (p->model == 2) jac[LOG_DSTD(p->fibres)] = p->s0 * sum_log_s;
  for (int k = 0; k < p->fibres; ++k) {
    double sum = 0.0;
    for (int j = k; j < p->fibres; ++j) sum += ds_df[j] * p->df_dt[j][k];
    jac[T(k)] = sum;
  }
  return signal;
}

double sse_at(const double* x, const int fibres, const int model, global const float* y, const int voxels, const int v,
              global const double* scheme, const int n) {
  const Point p = make_point(x, fibres, model);
  double sse = 0.0;
  for (int i = 0; i < n; ++i) {
    const double r = (double)y[(size_t)i * voxels + v] - model_signal(&p, scheme, i, 0);
    sse += r * r;
  }
  return sse;
}

// Levenberg-Marquardt on the SSE from x (Marquardt's diagonal scaling, Nielsen's damping update, at most
// MAX_ITERATIONS iterations, stopping when an accepted step lowers the SSE by less than RELATIVE_TOLERANCE
// relatively); returns the iterations done, x and *sse the result.
int levenberg_marquardt(double* x, double* sse_out, const int fibres, const int model, global const float* y,
                        const int voxels, const int v, global const double* scheme, const int n, const double y_norm2) {
  const int k = param_count(fibres, model);
  double normal[MAXP * MAXP], damped[MAXP * MAXP], gradient[MAXP], scale[MAXP], step[MAXP], trial[MAXP], row[MAXP];
  double sse = sse_at(x, fibres, model, y, voxels, v, scheme, n);
  const double floor_sse = 1e-28 * y_norm2;
  double lambda = 1e-3, nu = 2.0;
  int iteration = 0;
  while (iteration < MAX_ITERATIONS && sse > floor_sse) {
    ++iteration;
    for (int r = 0; r < k; ++r) {
      gradient[r] = 0.0;
      for (int c = 0; c <= r; ++c) normal[r * MAXP + c] = 0.0;
    }
    const Point p = make_point(x, fibres, model);
    for (int i = 0; i < n; ++i) {
      const double residual = (double)y[(size_t)i * voxels + v] - model_signal(&p, scheme, i, row);
      for (int r = 0; r < k; ++r) {
        gradient[r] += row[r] * residual;
        for (int c = 0; c <= r; ++c) normal[r * MAXP + c] += row[r] * row[c];
      }
    }
    double largest = 0.0;
    for (int r = 0; r < k; ++r) largest = fmax(largest, normal[r * MAXP + r]);
    for (int r = 0; r < k; ++r) scale[r] = fmax(normal[r * MAXP + r], 1e-12 * largest + 1e-300);
    bool accepted = false;
    double new_sse = sse;
    while (lambda < 1e12) {
      for (int r = 0; r < k; ++r) {
        for (int c = 0; c <= r; ++c) damped[r * MAXP + c] = normal[r * MAXP + c];
        damped[r * MAXP + r] += lambda * scale[r];
      }
      if (cholesky_solve(damped, gradient, step, k, 0.0)) {
        for (int r = 0; r < k; ++r) trial[r] = x[r] + step[r];
        new_sse = sse_at(trial, fibres, model, y, voxels, v, scheme, n);
        if (isfinite(new_sse) && new_sse < sse) {
          // Gain ratio: actual over predicted decrease, the prediction being step' (gradient + lambda D step).
          double predicted = 0.0;
          for (int r = 0; r < k; ++r) predicted += step[r] * (gradient[r] + lambda * scale[r] * step[r]);
          const double rho = predicted > 0.0 ? (sse - new_sse) / predicted : 1.0;
          const double cube = (2.0 * rho - 1.0) * (2.0 * rho - 1.0) * (2.0 * rho - 1.0);
          lambda *= fmax(1.0 / 3.0, 1.0 - cube);
          lambda = fmax(lambda, 1e-12);
          nu = 2.0;
          accepted = true;
          break;
        }
      }
      lambda *= nu;
      nu *= 2.0;
    }
    if (!accepted) break;
    const double relative = (sse - new_sse) / sse;
    for (int r = 0; r < k; ++r) x[r] = trial[r];
    sse = new_sse;
    if (relative < RELATIVE_TOLERANCE) break;
  }
  *sse_out = sse;
  return iteration;
}

// ---- the starts ----

void to_angles(const double* u, double* th, double* ph) {
  *th = acos(clamp(u[2], -1.0, 1.0));
  *ph = atan2(u[1], u[0]);
}

void direction_of(const double* x, const int j, double* u) {
  const double st = sin(x[TH(j)]);
  u[0] = st * cos(x[PH(j)]);
  u[1] = st * sin(x[PH(j)]);
  u[2] = cos(x[TH(j)]);
}

// Model 1 with `fibres` sticks along the tensor's eigenvectors: S0 and d = MD (in [2e-4, 4e-3]) from the tensor,
// f_1 = 0.2 + 0.6 FA in [0.2, 0.7], the others 0.1.
void direct_start(const Tensor* t, const int fibres, double* x) {
  x[0] = log(t->s0);
  x[1] = log(clamp(t->md, 2e-4, 4e-3));
  double remaining = 1.0;
  for (int j = 0; j < fibres; ++j) {
    const double f = j == 0 ? clamp(0.2 + 0.6 * t->fa, 0.2, 0.7) : 0.1;
    to_angles(t->e[j], &x[TH(j)], &x[PH(j)]);
    x[T(j)] = asin(sqrt(f / remaining));
    remaining -= f;
  }
}

// The unit vector perpendicular to u that Eigen's unitOrthogonal gives (as the host uses).
void unit_orthogonal(const double* u, double* w) {
  const double eps = 1e-12;
  if (!(fabs(u[0]) <= fabs(u[2]) * eps) || !(fabs(u[1]) <= fabs(u[2]) * eps)) {
    const double inv = 1.0 / sqrt(u[0] * u[0] + u[1] * u[1]);
    w[0] = -u[1] * inv, w[1] = u[0] * inv, w[2] = 0.0;
  } else {
    const double inv = 1.0 / sqrt(u[1] * u[1] + u[2] * u[2]);
    w[0] = 0.0, w[1] = -u[2] * inv, w[2] = u[1] * inv;
  }
}

// The nested chain's step from `fibres - 1` sticks (fitted, in x) to `fibres`: the new stick of f = 0.05 perpendicular
// to the earlier ones (the tensor's e2 made orthogonal to the first stick; for the third, the first two's cross
// product).
void add_stick(const Tensor* t, const int fibres, double* x) {
  double v1[3], added[3];
  direction_of(x, 0, v1);
  if (fibres == 2) {
    const double dot = t->e[1][0] * v1[0] + t->e[1][1] * v1[1] + t->e[1][2] * v1[2];
    for (int c = 0; c < 3; ++c) added[c] = t->e[1][c] - dot * v1[c];
  } else {
    double v2[3];
    direction_of(x, 1, v2);
    added[0] = v1[1] * v2[2] - v1[2] * v2[1];
    added[1] = v1[2] * v2[0] - v1[0] * v2[2];
    added[2] = v1[0] * v2[1] - v1[1] * v2[0];
  }
  double norm = sqrt(added[0] * added[0] + added[1] * added[1] + added[2] * added[2]);
  if (norm < 1e-3) {
    unit_orthogonal(v1, added);
    norm = sqrt(added[0] * added[0] + added[1] * added[1] + added[2] * added[2]);
  }
  for (int c = 0; c < 3; ++c) added[c] /= norm;
  const int j = fibres - 1;
  to_angles(added, &x[TH(j)], &x[PH(j)]);
  double f[3], unused[3][3];
  fractions(x, fibres - 1, f, unused);
  double left = 1.0;
  for (int m = 0; m < j; ++m) left -= f[m];
  x[T(j)] = asin(sqrt(clamp(0.05 / fmax(left, 1e-12), 0.0, 0.5)));
}

// Whether two sticks lie within 35 degrees of each other.
bool sticks_collapsed(const double* x, const int fibres) {
  for (int a = 0; a < fibres; ++a) {
    for (int b = a + 1; b < fibres; ++b) {
      double u[3], w[3];
      direction_of(x, a, u);
      direction_of(x, b, w);
      if (fabs(u[0] * w[0] + u[1] * w[1] + u[2] * w[2]) > cos(35.0 * M_PI / 180.0)) return true;
    }
  }
  return false;
}

typedef struct {
  double s0, d, d_std, tau;
  double th[3], ph[3], f[3];
} Params;

Params neutral_state(const double b0) {
  Params p;
  p.s0 = b0 > 0.0 && isfinite(b0) ? b0 : 1.0;
  p.d = 1e-3;
  p.d_std = MODEL == 2 ? 5e-4 : 0.0;
  const double th[3] = {M_PI / 2, M_PI / 2, 0.0}, ph[3] = {0.0, M_PI / 2, 0.0};
  for (int j = 0; j < 3; ++j) {
    p.f[j] = j < NF ? MIN_F : 0.0;
    p.th[j] = j < NF ? th[j] : 0.0;
    p.ph[j] = j < NF ? ph[j] : 0.0;
  }
  p.tau = 1.0 / ((0.05 * p.s0) * (0.05 * p.s0));
  return p;
}

// mcmc_ready: bounds, fibres by f (largest first, stable), angles rewritten into th in [0, pi], ph in (-pi, pi], tau.
Params mcmc_ready(const double* x, const double sse, const int n) {
  Params p;
  p.s0 = exp(x[0]);
  p.d = clamp(exp(x[1]), MIN_D, MAX_D);
  p.d_std = MODEL == 2 ? clamp(exp(x[LOG_DSTD(NF)]), MIN_DSTD, MAX_DSTD) : 0.0;
  double f[3], unused[3][3];
  fractions(x, NF, f, unused);
  double sum = 0.0;
  for (int j = 0; j < NF; ++j) {
    f[j] = clamp(f[j], MIN_F, MAX_F);
    sum += f[j];
  }
  if (sum > MAX_FSUM) {
    const double base = MIN_F * NF;
    const double scale = (MAX_FSUM - base) / (sum - base);
    for (int j = 0; j < NF; ++j) f[j] = MIN_F + (f[j] - MIN_F) * scale;
  }
  int order[3] = {0, 1, 2};
  for (int i = 1; i < NF; ++i) {
    for (int j = i; j > 0 && f[order[j]] > f[order[j - 1]]; --j) {
      const int swap = order[j];
      order[j] = order[j - 1];
      order[j - 1] = swap;
    }
  }
  for (int j = 0; j < 3; ++j) p.th[j] = p.ph[j] = p.f[j] = 0.0;
  for (int j = 0; j < NF; ++j) {
    double u[3];
    direction_of(x, order[j], u);
    p.f[j] = f[order[j]];
    to_angles(u, &p.th[j], &p.ph[j]);
  }
  const double variance = fmax(sse / (double)max(1, n - param_count(NF, MODEL)), (1e-4 * p.s0) * (1e-4 * p.s0) + 1e-12);
  p.tau = 1.0 / variance;
  return p;
}

// The least-squares fit of voxel v (model 1 with NF sticks, then model 2 from it); false when the tensor fit fails or
// the result is not finite.
bool fit_ball_stick(global const float* y, const int voxels, const int v, global const double* scheme, const int n,
                    double* x, double* sse) {
  Tensor tensor;
  if (!fit_tensor(y, voxels, v, scheme, n, &tensor)) return false;
  double y_norm2 = 0.0;
  for (int i = 0; i < n; ++i) {
    const double s = (double)y[(size_t)i * voxels + v];
    y_norm2 += s * s;
  }
  direct_start(&tensor, NF, x);
  levenberg_marquardt(x, sse, NF, 1, y, voxels, v, scheme, n, y_norm2);
  // The nested start only where the direct one collapsed two sticks or did not reach a finite fit.
  if (NF > 1 && (!isfinite(*sse) || sticks_collapsed(x, NF))) {
    double nested[MAXP], nested_sse;
    direct_start(&tensor, 1, nested);
    levenberg_marquardt(nested, &nested_sse, 1, 1, y, voxels, v, scheme, n, y_norm2);
    for (int fibres = 2; fibres <= NF; ++fibres) {
      add_stick(&tensor, fibres, nested);
      levenberg_marquardt(nested, &nested_sse, fibres, 1, y, voxels, v, scheme, n, y_norm2);
    }
    if (nested_sse < *sse) {
      for (int r = 0; r < param_count(NF, 1); ++r) x[r] = nested[r];
      *sse = nested_sse;
    }
  }
  if (MODEL == 2) {
    x[LOG_DSTD(NF)] = x[1] + log(0.5);
    levenberg_marquardt(x, sse, NF, 2, y, voxels, v, scheme, n, y_norm2);
  }
  bool finite = isfinite(*sse);
  for (int r = 0; r < param_count(NF, MODEL); ++r) finite = finite && isfinite(x[r]);
  return finite;
}

kernel void ball_stick_start(global const float* y, global const double* scheme, const int n, const int voxels,
                             global double* state, global uchar* fitted) {
  const int v = (int)get_global_id(0);
  if (v >= voxels) return;
  bool finite = true, any = false;
  double b0_sum = 0.0;
  int b0_count = 0;
  for (int i = 0; i < n; ++i) {
    const double s = (double)y[(size_t)i * voxels + v];
    finite = finite && isfinite(s);
    any = any || s != 0.0;
    if (scheme[4 * i] <= B0_THRESHOLD && isfinite(s)) {
      b0_sum += s;
      ++b0_count;
    }
  }
  const double b0 = b0_count > 0 ? b0_sum / b0_count : 0.0;
  double x[MAXP], sse = INFINITY;
  const bool ok = finite && any && b0 > 0.0 && fit_ball_stick(y, voxels, v, scheme, n, x, &sse);
  const Params p = ok ? mcmc_ready(x, sse, n) : neutral_state(b0);
  const double q[NQ] = {p.s0,    p.d,     p.d_std, p.tau,   p.th[0], p.ph[0], p.f[0],
                        p.th[1], p.ph[1], p.f[1],  p.th[2], p.ph[2], p.f[2]};
  for (int k = 0; k < NQ; ++k) state[(size_t)k * voxels + v] = q[k];
  fitted[v] = ok ? 1 : 0;
}
