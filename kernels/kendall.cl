// Kendall's tau-b between every pair of nodes on the device (core/connectome/kendall.cpp, docs/algorithms/connectome.md):
// S_ij = sum over time pairs s < t of sign(x_i[t] - x_i[s]) sign(x_j[t] - x_j[s]), tau_b = S_ij / (D_i D_j) with
// D_i = sqrt(n0 - ties_i). The time pairs are taken a chunk at a time: kendall_signs packs each node's signs for the
// chunk into two bit planes (positive, negative; 32 pairs a word), kendall_accumulate adds, per 64 x 64 tile of node
// pairs, popcount((A&C)|(B&D)) - popcount((A&D)|(B&C)) (concordant minus discordant) into the band's S, and
// kendall_finalize divides, thresholds and appends the edges. Memory never holds the N x L(L-1)/2 signs.
//
// Memory layout (N nodes, LP padded series length, W = words of a chunk, BAND rows of the band starting at node b0):
//   z          float [N][LP]: raw series
//   pair_s/t   ushort [W * 32]: the chunk's time pairs (s < t); `pairs` of them are real
//   pos, neg   uint [N][W]: the sign bit planes of the chunk
//   s_band     int [BAND][N]: S of the band's rows (i - b0) against every column j
//   dinv       float [N]: 1 / D_i (0 for a constant series)
// Compile-time defines: ABSOLUTE.
#define TS 64
#define TKW 16  // words per local-memory step
#define WPT 4

__kernel void kendall_signs(__global const float* restrict z, const int lp, __global const ushort* restrict pair_s,
                            __global const ushort* restrict pair_t, const int pairs, const int words, const int first,
                            const int n, __global uint* restrict pos, __global uint* restrict neg) {
  const int w = get_global_id(0);
  const int node = first + (int)get_global_id(1);
  if (w >= words || node >= n) return;
  const __global float* x = z + (size_t)node * (size_t)lp;
  uint p = 0, q = 0;
  for (int b = 0; b < 32; ++b) {
    const int k = w * 32 + b;
    if (k < pairs) {
      const float d = x[pair_t[k]] - x[pair_s[k]];
      p |= (uint)(d > 0.0f) << b;
      q |= (uint)(d < 0.0f) << b;
    }
  }
  pos[(size_t)node * (size_t)words + (size_t)w] = p;
  neg[(size_t)node * (size_t)words + (size_t)w] = q;
}

// One work-group per 64 x 64 tile (row tile b0 / 64 + group 1, column tile tj0 + group 0; below-diagonal tiles return).
__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void kendall_accumulate(
    __global const uint* restrict pos, __global const uint* restrict neg, const int words, const int n, const int b0,
    const int band, const int tj0, __global int* restrict s_band) {
  const int ti = b0 / TS + (int)get_group_id(1);
  const int tj = tj0 + (int)get_group_id(0);
  if (tj < ti) return;
  const int lx = get_local_id(0), ly = get_local_id(1), flat = ly * 16 + lx;
  const int row0 = ti * TS, col0 = tj * TS;
  __local uint ap[TKW][TS + 1], an[TKW][TS + 1], bp[TKW][TS + 1], bn[TKW][TS + 1];
  int acc[WPT][WPT];
  for (int u = 0; u < WPT; ++u) {
    for (int v = 0; v < WPT; ++v) acc[u][v] = 0;
  }
  for (int k0 = 0; k0 < words; k0 += TKW) {
    for (int e = flat; e < TS * TKW; e += 256) {
      const int r = e / TKW, k = e % TKW;
      const int gi = row0 + r, gj = col0 + r, kk = k0 + k;
      const int in_i = gi < n && kk < words, in_j = gj < n && kk < words;
      ap[k][r] = in_i ? pos[(size_t)gi * (size_t)words + (size_t)kk] : 0u;
      an[k][r] = in_i ? neg[(size_t)gi * (size_t)words + (size_t)kk] : 0u;
      bp[k][r] = in_j ? pos[(size_t)gj * (size_t)words + (size_t)kk] : 0u;
      bn[k][r] = in_j ? neg[(size_t)gj * (size_t)words + (size_t)kk] : 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TKW; ++k) {
      uint a1[WPT], a2[WPT], c1[WPT], c2[WPT];
      for (int u = 0; u < WPT; ++u) {
        a1[u] = ap[k][ly + 16 * u];
        a2[u] = an[k][ly + 16 * u];
        c1[u] = bp[k][lx + 16 * u];
        c2[u] = bn[k][lx + 16 * u];
      }
      for (int u = 0; u < WPT; ++u) {
        for (int v = 0; v < WPT; ++v) {
          acc[u][v] += (int)popcount((a1[u] & c1[v]) | (a2[u] & c2[v])) -
                       (int)popcount((a1[u] & c2[v]) | (a2[u] & c1[v]));
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int u = 0; u < WPT; ++u) {
    const int i = row0 + ly + 16 * u;
    if (i >= n || i - b0 >= band) continue;
    for (int v = 0; v < WPT; ++v) {
      const int j = col0 + lx + 16 * v;
      if (j >= n || j <= i) continue;
      s_band[(size_t)(i - b0) * (size_t)n + (size_t)j] += acc[u][v];
    }
  }
}

// tau_b of the band's pairs (i in the band, j > i), thresholded; edges appended as in correlation_tile.cl.
// Rows row0 .. row0 + rows - 1 of the band (nodes b0 + row).
__kernel void kendall_finalize(__global const int* restrict s_band, __global const float* restrict dinv, const int n,
                               const int b0, const int row0, const int rows, const float threshold,
                               __global int* restrict count, const int capacity, __global int* restrict ei,
                               __global int* restrict ej, __global float* restrict er) {
  const int j = get_global_id(0);
  const int row = row0 + (int)get_global_id(1);
  const int i = b0 + row;
  if (j >= n || (int)get_global_id(1) >= rows || i >= n || j <= i) return;
  const float di = dinv[i], dj = dinv[j];
  if (di == 0.0f || dj == 0.0f) return;
  const float tau = (float)s_band[(size_t)row * (size_t)n + (size_t)j] * di * dj;  // |S| < 2^24: exact in float
#if ABSOLUTE
  const int keep = fabs(tau) >= threshold;
#else
  const int keep = tau >= threshold;
#endif
  if (keep) {
    const int slot = atomic_inc(count);
    if (slot < capacity) {
      ei[slot] = i;
      ej[slot] = j;
      er[slot] = tau;
    }
  }
}
