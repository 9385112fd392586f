// The values of chosen voxels of one volume, for the live QA stage's carpet plot (one column a volume).
//
// Memory layout: `volume` one volume (x fastest); `indices` `count` voxel indices into it (any order, repeats
// allowed); `values` `count` floats, values[i] = volume[indices[i]].
// NDRange: 1D, global >= count (rounded up to the local size), any local size.

__kernel void gather_voxels(__global const float* restrict volume, __global const int* restrict indices,
                            const int count, __global float* restrict values) {
  const int i = get_global_id(0);
  if (i >= count) return;
  values[i] = volume[indices[i]];
}
