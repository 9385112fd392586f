// Thresholded correlations of normalised series, one 128 x 128 tile of node pairs per work-group
// (core/connectome/thresholded_correlation.cpp, docs/algorithms/connectome.md): r_ij = z_i . z_j, where each z is a
// node's series minus its mean, divided by its norm (Pearson; Spearman: of its average ranks), so the tile is a small
// GEMM. Pairs i < j of valid nodes whose r passes the threshold are written out sorted by (i, j), in three steps per
// launch: correlation_tile reserves room for its tile's edges with one atomic add and writes them there in row-major
// order, with each tile row's count; edge_segments_scan turns the counts of each launch row into offsets along it
// (tiles in column order); edge_rows_scan gives each launch row its start; edge_segments_gather moves every tile row's
// edges from where its tile put them to their place in the sorted list. The host reads the count and the sorted
// edges of each launch, so a chunk of launches needs no sorting on the host.
//
// Memory layout (N nodes, LP = the series length rounded up to TK, zero-padded; a launch: `rows` tile rows from ti0
// by `cols` tile columns from tj0, launch row a * 128 + rr = node (ti0 + a) * 128 + rr):
//   zr, zc   float [rows][LP]: normalised series, row after row, of the nodes row_base.. (zr: the row tiles' nodes)
//            and col_base.. (zc: the column tiles'); all N nodes in one buffer (zr = zc, both bases 0) when they fit
//            the device, else blocks of nodes (a multiple of TS, so a tile never straddles two blocks). Node indices
//            (n, valid, ti, tj, the edges) are global: node g is row g - row_base of zr.
//   valid    uchar [N]: 0 for a constant series (no edges)
//   count    int [1]: the launch's edges (may exceed capacity: then nothing it found is stored in full)
//   tiled    int [capacity][3]: i, j, bits of r, each tile's edges together (row-major within it), tiles in any order
//   tile_at  int [rows][cols][2]: where each tile's edges start in `tiled`, and how many there are
//   counts   int [rows * 128][cols]: edges of each launch row in each tile
//   offsets  int [rows * 128][cols]: where a tile's part of a launch row starts within that row (exclusive scan)
//   row_edges int [rows * 128]: each launch row's edges; row_start int [rows * 128]: its first slot (exclusive scan)
//   edges    int [capacity][3]: the launch's edges sorted by (i, j) (edge_list.clh's layout)
// One launch: row tiles ti = ti0 + group 1, column tiles tj = tj0 + group 0; tiles below the diagonal (tj < ti) count
// nothing, so a band of rows is one launch. The host keeps a launch's row tiles within zr's nodes and its column tiles
// within zc's (the loads check only gi, gj < n).
// Compile-time defines: ABSOLUTE (|r| >= threshold instead of r >= threshold).
// NDRange: correlation_tile 2D, local = (16, 16), global = (16 * cols, 16 * rows); edge_segments_scan local 256,
// global 256 * rows * 128; edge_rows_scan local 256, global 256; edge_segments_gather local (256, 1), global
// (256 * cols, rows).
#define TS 128       // tile side (nodes)
#define TK 16        // series samples per local-memory step
#define WPT 8        // outputs per work-item along each side: 64 multiply-adds per 4 float4 local loads
#define LS (TS + 4)  // local row stride (floats): float4-aligned; the transposing stores conflict 2-way at most

// The node (within the tile) of a work-item's u-th output along one side: two runs of four, 64 apart, so that a
// work-item's float4 loads are aligned and a warp's cover consecutive bytes.
#define OWN(l, u) ((u) < 4 ? (l)*4 + (u) : 64 + (l)*4 + (u)-4)
#define SEG 33  // local stride of a tile row's 32 parts (a work-item's 4 columns in each half of the tile)

#if ABSOLUTE
#define PASSES(r, t) (fabs(r) >= (t))
#else
#define PASSES(r, t) ((r) >= (t))
#endif

// Exclusive scan of a tile's TS row counts x[0 .. TS) in local memory, in place, the total in x[TS] and returned; by
// one work-item.
inline int scan_tile_rows(__local int* x) {
  int sum = 0;
  for (int r = 0; r < TS; ++r) {
    const int c = x[r];
    x[r] = sum;
    sum += c;
  }
  x[TS] = sum;
  return sum;
}

__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void correlation_tile(
    __global const float* restrict zr, __global const float* restrict zc, __global const uchar* restrict valid,
    const int n, const int lp, const int ti0, const int tj0, const int row_base, const int col_base,
    const float threshold, __global int* restrict count, const int capacity, __global int* restrict tiled,
    __global int* restrict tile_at, __global int* restrict counts, const int cols) {
  const int ti = ti0 + (int)get_group_id(1);
  const int tj = tj0 + (int)get_group_id(0);
  const int flat = (int)get_local_id(1) * 16 + (int)get_local_id(0);
  const size_t launch_row0 = (size_t)get_group_id(1) * TS;  // this tile's first row among the launch's rows
  // The whole work-group: below the diagonal, no edges.
  if (tj < ti) {
    if (flat < TS) counts[(launch_row0 + (size_t)flat) * (size_t)cols + (size_t)get_group_id(0)] = 0;
    if (flat == 0) tile_at[2 * (get_group_id(1) * (size_t)cols + get_group_id(0)) + 1] = 0;
    return;
  }
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
  // Which of the work-item's pairs pass (bit u * 8 + v), and how many in each of its two 4-column parts of each row:
  // a tile row's 32 parts in column order are (half, tx) = (0, 0..15), (1, 0..15).
  __local int part[TS * SEG];  // per tile row: its parts' counts, then their offsets within the row
  __local int row_at[TS + 1];  // per tile row: its first edge within the tile; [TS]: the tile's edges
  ulong keep = 0;
  for (int u = 0; u < WPT; ++u) {
    const int i = row0 + OWN(ty, u);
    int in_half[2] = {0, 0};
    if (i < n && valid[i]) {
      for (int v = 0; v < WPT; ++v) {
        const int j = col0 + OWN(tx, v);
        if (j < n && j > i && valid[j] && PASSES(acc[u][v], threshold)) {
          keep |= (ulong)1 << (u * WPT + v);
          ++in_half[v / 4];
        }
      }
    }
    part[OWN(ty, u) * SEG + tx] = in_half[0];
    part[OWN(ty, u) * SEG + 16 + tx] = in_half[1];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (flat < TS) {  // each tile row: its parts' offsets and its count
    int sum = 0;
    for (int p = 0; p < 32; ++p) {
      const int c = part[flat * SEG + p];
      part[flat * SEG + p] = sum;
      sum += c;
    }
    row_at[flat] = sum;
    counts[(launch_row0 + (size_t)flat) * (size_t)cols + (size_t)get_group_id(0)] = sum;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  // The rows' starts within the tile and room for its edges, by one work-item (128 local reads, little beside the
  // tile's GEMM). Scans by several work-items here (Hillis-Steele; two levels of 16 runs) lost edges on PoCL, for a
  // reason not yet found (scan_group's, below, with no accumulators live, is right there).
  __local int tile_first;
  if (flat == 0) {
    const int sum = scan_tile_rows(row_at);
    tile_first = sum > 0 ? atomic_add(count, sum) : 0;
    const size_t k = get_group_id(1) * (size_t)cols + get_group_id(0);
    tile_at[2 * k] = tile_first;
    tile_at[2 * k + 1] = sum;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (keep == 0) return;
  for (int u = 0; u < WPT; ++u) {
    const int r = OWN(ty, u), i = row0 + r;
    for (int side = 0; side < 2; ++side) {
      // tile_first + row_at[r] + part[...] <= count after the atomic add, which the host keeps below 2^31
      int slot = tile_first + row_at[r] + part[r * SEG + side * 16 + tx];
      for (int v = side * 4; v < side * 4 + 4; ++v) {
        if (((keep >> (u * WPT + v)) & 1) == 0) continue;
        if (slot < capacity) {
          tiled[3 * (size_t)slot] = i;
          tiled[3 * (size_t)slot + 1] = col0 + OWN(tx, v);
          tiled[3 * (size_t)slot + 2] = as_int(acc[u][v]);
        }
        ++slot;
      }
    }
  }
}

// Exclusive scan of `len` ints of `x` into `out` (may be `x`), by one work-group of 256; returns the total to every
// work-item. `scratch`: local int [256].
inline int scan_group(__global const int* x, __global int* out, const int len, __local int* scratch) {
  const int lid = (int)get_local_id(0);
  int carry = 0;
  for (int base = 0; base < len; base += 256) {
    const int v = base + lid < len ? x[base + lid] : 0;
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = 1; step < 256; step <<= 1) {  // inclusive Hillis-Steele scan
      const int add = lid >= step ? scratch[lid - step] : 0;
      barrier(CLK_LOCAL_MEM_FENCE);
      scratch[lid] += add;
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (base + lid < len) out[base + lid] = carry + scratch[lid] - v;
    carry += scratch[255];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return carry;
}

// Each launch row (work-group): its tiles' counts into offsets along the row, and the row's edges.
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void edge_segments_scan(__global const int* restrict counts,
                                                                                  __global int* restrict offsets,
                                                                                  __global int* restrict row_edges,
                                                                                  const int cols) {
  __local int scratch[256];
  const size_t row = get_group_id(0);
  const int total = scan_group(counts + row * (size_t)cols, offsets + row * (size_t)cols, cols, scratch);
  if (get_local_id(0) == 0) row_edges[row] = total;
}

// The launch rows' starts (one work-group).
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void edge_rows_scan(__global const int* restrict row_edges,
                                                                              __global int* restrict row_start,
                                                                              const int rows) {
  __local int scratch[256];
  scan_group(row_edges, row_start, rows, scratch);
}

// Each tile (work-group): its edges, row by row as correlation_tile wrote them, to their sorted places. Slots at or
// past `capacity` (a launch that overflowed; the host repeats it on less work) are neither read nor written.
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void edge_segments_gather(
    __global const int* restrict tiled, __global const int* restrict tile_at, __global const int* restrict counts,
    __global const int* restrict offsets, __global const int* restrict row_start, const int cols, const int capacity,
    __global int* restrict edges) {
  __local int first[TS + 1];  // the tile's edges before each of its rows
  const int lid = (int)get_local_id(0);
  const size_t t = get_group_id(0), launch_row0 = get_group_id(1) * (size_t)TS;
  const size_t k = get_group_id(1) * (size_t)cols + t;
  // No return before the barriers (the same for the whole group, but not provably so to a compiler that must keep
  // every work-item in step): a tile without edges reads no counts and copies nothing.
  const int total = tile_at[2 * k + 1];
  if (lid < TS) first[lid] = total > 0 ? counts[(launch_row0 + (size_t)lid) * (size_t)cols + t] : 0;  // in parallel
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) scan_tile_rows(first);
  barrier(CLK_LOCAL_MEM_FENCE);
  const int at = tile_at[2 * k];
  for (int e = lid; e < total; e += 256) {
    int lo = 0, hi = TS - 1;  // the last row whose first edge is at or before e
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (first[mid] <= e) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const size_t row = launch_row0 + (size_t)lo;
    const long src = (long)at + e;
    const long dst = (long)row_start[row] + offsets[row * (size_t)cols + t] + (e - first[lo]);
    if (src >= capacity || dst >= capacity) continue;
    edges[3 * dst] = tiled[3 * src];
    edges[3 * dst + 1] = tiled[3 * src + 1];
    edges[3 * dst + 2] = tiled[3 * src + 2];
  }
}
