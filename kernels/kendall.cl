// Kendall's tau-b between every pair of nodes on the device (core/connectome/kendall.cpp,
// docs/algorithms/connectome.md): S_ij = sum over time pairs s < t of sign(x_i[t] - x_i[s]) sign(x_j[t] - x_j[s]),
// tau_b = S_ij / (D_i D_j) with D_i = sqrt(n0 - ties_i). The time pairs are taken a chunk at a time: kendall_signs
// packs each node's signs for the chunk into two bit planes (32 pairs a word): nz (the pair is not tied) and up (x[t] >
// x[s]; 0 where tied). kendall_accumulate adds, per 64 x 64 tile of node pairs, into the band's S:
//  - a tile pair with a node of many ties (integer data): S = popcount(m) - 2 popcount(m & (up_i ^ up_j)), m = nz_i &
//    nz_j (the pairs untied in both: concordant minus discordant);
//  - otherwise one popcount: S = pairs - 2 popcount(up_i ^ up_j). A time pair p tied in i only then counts
//    1 - 2 up_j(p) = -sign_j(p) instead of 0, and one tied in both counts +1 instead of 0: kendall_correct adds
//    sign_j(p) for each listed tied pair of a node i with few ties, and -1 (once) where j is tied there too.
// kendall_finalize divides, thresholds and appends the edges. Memory never holds the N x L(L-1)/2 signs.
//
// Memory layout (N nodes, LP padded series length, W = words of a chunk, BAND rows of the band starting at node b0):
//   z          float [N][LP]: raw series
//   pair_s/t   ushort [W * 32]: the chunk's time pairs (s < t); `pairs` of them are real
//   up, nz     uint [N][W]: the sign bit planes of the chunk: bit b of word w is pair b * W + w (0 past `pairs`)
//   dense      uchar [tiles]: 1 if a node of the 64-node tile has many tied pairs (two-popcount path)
//   sparse     int [NS]: nodes with a few tied pairs; ties listed in tie_s/tie_t [tie_off[k] .. tie_off[k + 1])
//   s_band     int [BAND][N]: S of the band's rows (i - b0) against every column j
//   dinv       float [N]: 1 / D_i (0 for a constant series)
// Compile-time defines: ABSOLUTE.
#include "edge_list.clh"

#define TS 64
#define TKW 16  // words per local-memory step
#define WPT 4

__kernel void kendall_signs(__global const float* restrict z, const int lp, __global const ushort* restrict pair_s,
                            __global const ushort* restrict pair_t, const int pairs, const int words, const int first,
                            const int n, __global uint* restrict up, __global uint* restrict nz) {
  const int w = get_global_id(0);
  const int node = first + (int)get_global_id(1);
  if (w >= words || node >= n) return;
  const __global float* x = z + (size_t)node * (size_t)lp;
  uint p = 0, q = 0;
  for (int b = 0; b < 32; ++b) {
    const int k = b * words + w;  // bit b of word w: consecutive work-items read consecutive pairs
    if (k < pairs) {
      const float xs = x[pair_s[k]], xt = x[pair_t[k]];
      p |= (uint)(xt > xs) << b;
      q |= (uint)(xt != xs) << b;
    }
  }
  up[(size_t)node * (size_t)words + (size_t)w] = p;
  nz[(size_t)node * (size_t)words + (size_t)w] = q;
}

// One work-group per 64 x 64 tile (row tile b0 / 64 + group 1, column tile tj0 + group 0; below-diagonal tiles return).
__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void kendall_accumulate(
    __global const uint* restrict up, __global const uint* restrict nz, __global const uchar* restrict dense,
    const int pairs, const int words, const int n, const int b0, const int band, const int tj0,
    __global int* restrict s_band) {
  const int ti = b0 / TS + (int)get_group_id(1);
  const int tj = tj0 + (int)get_group_id(0);
  if (tj < ti) return;
  const int with_ties = dense[ti] | dense[tj];  // the same for the whole work-group
  const int lx = get_local_id(0), ly = get_local_id(1), flat = ly * 16 + lx;
  const int row0 = ti * TS, col0 = tj * TS;
  __local uint au[TKW][TS + 1], an[TKW][TS + 1], bu[TKW][TS + 1], bn[TKW][TS + 1];
  int acc[WPT][WPT];
  for (int u = 0; u < WPT; ++u) {
    for (int v = 0; v < WPT; ++v) acc[u][v] = 0;
  }
  for (int k0 = 0; k0 < words; k0 += TKW) {
    for (int e = flat; e < TS * TKW; e += 256) {
      const int r = e / TKW, k = e % TKW;
      const int gi = row0 + r, gj = col0 + r, kk = k0 + k;
      const int in_i = gi < n && kk < words, in_j = gj < n && kk < words;
      const size_t at_i = (size_t)gi * (size_t)words + (size_t)kk, at_j = (size_t)gj * (size_t)words + (size_t)kk;
      au[k][r] = in_i ? up[at_i] : 0u;
      bu[k][r] = in_j ? up[at_j] : 0u;
      if (with_ties) {
        an[k][r] = in_i ? nz[at_i] : 0u;
        bn[k][r] = in_j ? nz[at_j] : 0u;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (with_ties) {
      for (int k = 0; k < TKW; ++k) {
        uint a1[WPT], a2[WPT], c1[WPT], c2[WPT];
        for (int u = 0; u < WPT; ++u) {
          a1[u] = au[k][ly + 16 * u];
          a2[u] = an[k][ly + 16 * u];
          c1[u] = bu[k][lx + 16 * u];
          c2[u] = bn[k][lx + 16 * u];
        }
        for (int u = 0; u < WPT; ++u) {
          for (int v = 0; v < WPT; ++v) {
            const uint m = a2[u] & c2[v];
            acc[u][v] += (int)popcount(m) - 2 * (int)popcount(m & (a1[u] ^ c1[v]));
          }
        }
      }
    } else {
      for (int k = 0; k < TKW; ++k) {
        uint a1[WPT], c1[WPT];
        for (int u = 0; u < WPT; ++u) {
          a1[u] = au[k][ly + 16 * u];
          c1[u] = bu[k][lx + 16 * u];
        }
        for (int u = 0; u < WPT; ++u) {
          for (int v = 0; v < WPT; ++v) acc[u][v] += (int)popcount(a1[u] ^ c1[v]);  // discordant pairs
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
      s_band[(size_t)(i - b0) * (size_t)n + (size_t)j] += with_ties ? acc[u][v] : pairs - 2 * acc[u][v];
    }
  }
}

// The correction of the one-popcount tiles for listed ties: one work-item per (sparse node k, column node j). Pair
// (min(i, j), max(i, j)) when its row lies in the band [b0, b0 + band) and neither tile is dense.
__kernel void kendall_correct(__global const float* restrict z, const int lp, __global const int* restrict sparse,
                              const int sparse_count, __global const int* restrict tie_off,
                              __global const ushort* restrict tie_s, __global const ushort* restrict tie_t,
                              __global const uchar* restrict dense, const int n, const int b0, const int band,
                              __global int* restrict s_band) {
  const int j = get_global_id(0);
  const int k = get_global_id(1);
  if (j >= n || k >= sparse_count) return;
  const int i = sparse[k];
  if (i == j) return;
  const int lo = min(i, j), hi = max(i, j);
  if (lo < b0 || lo - b0 >= band || dense[lo / TS] || dense[hi / TS]) return;
  const __global float* x = z + (size_t)j * (size_t)lp;
  int c = 0;
  for (int e = tie_off[k]; e < tie_off[k + 1]; ++e) {
    const float xs = x[tie_s[e]], xt = x[tie_t[e]];
    c += xt > xs ? 1 : (xt < xs ? -1 : (i < j ? -1 : 0));  // tied in both: -1, counted from the smaller node's side
  }
  if (c != 0) atomic_add(&s_band[(size_t)(lo - b0) * (size_t)n + (size_t)hi], c);
}

// tau_b of the band's pairs (i in the band, j > i), thresholded and appended to the edge list (edge_list.clh).
// Rows row0 .. row0 + rows - 1 of the band (nodes b0 + row).
__kernel void kendall_finalize(__global const int* restrict s_band, __global const float* restrict dinv, const int n,
                               const int b0, const int row0, const int rows, const float threshold,
                               __global int* restrict count, const int capacity, __global int* restrict edges) {
  const int j = get_global_id(0);
  const int row = row0 + (int)get_global_id(1);
  const int i = b0 + row;
  if (j >= n || (int)get_global_id(1) >= rows || i >= n || j <= i) return;
  const float di = dinv[i], dj = dinv[j];
  if (di == 0.0f || dj == 0.0f) return;
  const float tau = (float)s_band[(size_t)row * (size_t)n + (size_t)j] * di * dj;  // S exact; tau within 2 ulp
  append_if_passing(tau, threshold, i, j, count, capacity, edges);
}
