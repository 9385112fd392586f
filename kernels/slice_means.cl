// Per-slice sums of a volume inside a mask, for the QA stage's slice intensity z-scores and the global signal: one
// work-group per slice z; each work-item sums the slice's masked, finite voxels of its stride (a few dozen at most for
// a 104x104 slice) and writes that partial sum and count; the host adds a slice's LOCAL_SIZE partials in double and
// divides: slice mean = sum / count; global signal = sum of sums / sum of counts. (A float tree over the group lost
// ~1e-6 of the mean, enough to move a slice's z by 1e-4 on real data.)
//
// Memory layout: `volume` (floats) and `mask` (bytes, non-zero: inside) are one volume, x fastest, then y, then z, of
// `slice_voxels` = nx * ny voxels per slice; `sums` (float) and `counts` (int) are [slice][LOCAL_SIZE].
// NDRange: 1D, global = nz * LOCAL_SIZE, local = LOCAL_SIZE (a define).

__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1))) void slice_sums(__global const float* restrict volume,
                                                                                 __global const uchar* restrict mask,
                                                                                 __global float* restrict sums,
                                                                                 __global int* restrict counts,
                                                                                 const int slice_voxels) {
  const int lid = get_local_id(0);
  const int z = get_group_id(0);
  const long first = (long)z * slice_voxels;
  float acc = 0.0f;
  int count = 0;
  for (int i = lid; i < slice_voxels; i += LOCAL_SIZE) {
    const float x = volume[first + i];
    if (mask[first + i] != 0 && isfinite(x)) {
      acc += x;
      ++count;
    }
  }
  sums[(long)z * LOCAL_SIZE + lid] = acc;
  counts[(long)z * LOCAL_SIZE + lid] = count;
}
