// Thresholded correlations of normalised series, one 128 x 128 tile of node pairs per work-group
// (core/connectome/thresholded_correlation.cpp, docs/algorithms/connectome.md): r_ij = z_i . z_j, where each z is a
// node's series minus its mean, divided by its norm (Pearson; Spearman: of its average ranks), so the tile is a small
// GEMM. Pairs i < j of valid nodes whose r passes the threshold are appended to the edge list through an atomic
// counter; the host reads the count and the edges of each launch and grows nothing on the device.
//
// Memory layout (N nodes, LP = the series length rounded up to TK, zero-padded):
//   zr, zc   float [rows][LP]: normalised series, row after row, of the nodes row_base.. (zr: the row tiles' nodes)
//            and col_base.. (zc: the column tiles'); all N nodes in one buffer (zr = zc, both bases 0) when they fit
//            the device, else blocks of nodes (a multiple of TS, so a tile never straddles two blocks). Node indices
//            (n, valid, ti, tj, the edges) are global: node g is row g - row_base of zr.
//   valid    uchar [N]: 0 for a constant series (no edges)
//   count, edges: the edge list (edge_list.clh), edges (i < j) in no particular order
// One launch: row tiles ti = ti0 + group 1, column tiles tj = tj0 + group 0; tiles below the diagonal (tj < ti) return
// at once, so a band of rows is one launch. The host keeps a launch's row tiles within zr's nodes and its column tiles
// within zc's (the loads check only gi, gj < n).
// Compile-time defines: ABSOLUTE (|r| >= threshold instead of r >= threshold).
// NDRange: 2D, local = (16, 16), global = (16 * column tiles, 16 * row tiles).
#include "edge_list.clh"

#define TS 128       // tile side (nodes)
#define TK 16        // series samples per local-memory step
#define WPT 8        // outputs per work-item along each side: 64 multiply-adds per 4 float4 local loads
#define LS (TS + 4)  // local row stride (floats): float4-aligned; the transposing stores conflict 2-way at most

// The node (within the tile) of a work-item's u-th output along one side: two runs of four, 64 apart, so that a
// work-item's float4 loads are aligned and a warp's cover consecutive bytes.
#define OWN(l, u) ((u) < 4 ? (l)*4 + (u) : 64 + (l)*4 + (u)-4)

__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void correlation_tile(
    __global const float* restrict zr, __global const float* restrict zc, __global const uchar* restrict valid,
    const int n, const int lp, const int ti0, const int tj0, const int row_base, const int col_base,
    const float threshold, __global int* restrict count, const int capacity, __global int* restrict edges) {
  const int ti = ti0 + (int)get_group_id(1);
  const int tj = tj0 + (int)get_group_id(0);
  if (tj < ti) return;  // the whole work-group: below the diagonal
  const int flat = (int)get_local_id(1) * 16 + (int)get_local_id(0);
  // Outputs: column group tx, row group ty of a 16 x 16 grid, each warp an 8 x 4 block of it, so that a warp's float4
  // loads ask for 4 distinct row values and 8 distinct (consecutive) column values: one local-memory wavefront each.
  const int lane = flat & 31, warp = flat >> 5;
  const int tx = (warp & 1) * 8 + (lane & 7), ty = (warp >> 1) * 4 + (lane >> 3);
  const int row0 = ti * TS, col0 = tj * TS;
  __local float4 a4[TK][LS / 4];
  __local float4 b4[TK][LS / 4];
  __local float* a = (__local float*)a4;
  __local float* b = (__local float*)b4;
  float acc[WPT][WPT];
  for (int u = 0; u < WPT; ++u) {
    for (int v = 0; v < WPT; ++v) acc[u][v] = 0.0f;
  }
  for (int k0 = 0; k0 < lp; k0 += TK) {
    for (int e = flat; e < TS * TK; e += 256) {  // 8 values of each tile per work-item, 16 samples of a row together
      const int r = e / TK, k = e % TK;
      const int gi = row0 + r, gj = col0 + r;
      a[k * LS + r] = gi < n ? zr[(size_t)(gi - row_base) * (size_t)lp + (size_t)(k0 + k)] : 0.0f;
      b[k * LS + r] = gj < n ? zc[(size_t)(gj - col_base) * (size_t)lp + (size_t)(k0 + k)] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TK; ++k) {
      const float4 a0 = a4[k][ty], a1 = a4[k][16 + ty], b0 = b4[k][tx], b1 = b4[k][16 + tx];
      const float av[WPT] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[WPT] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
      for (int u = 0; u < WPT; ++u) {
        for (int v = 0; v < WPT; ++v) acc[u][v] = fma(av[u], bv[v], acc[u][v]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int u = 0; u < WPT; ++u) {
    const int i = row0 + OWN(ty, u);
    if (i >= n || !valid[i]) continue;
    for (int v = 0; v < WPT; ++v) {
      const int j = col0 + OWN(tx, v);
      if (j >= n || j <= i || !valid[j]) continue;
      append_if_passing(acc[u][v], threshold, i, j, count, capacity, edges);
    }
  }
}
