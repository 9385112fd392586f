// Binary threshold: mask[i] = (in[i] > threshold) ? 1 : 0.
//
// Memory layout: `in` (float) and `mask` (uchar) are one volume of n voxels, x fastest.
// NDRange: 1D, global n rounded up to the local size.

__kernel void threshold_above(__global const float* restrict in, __global uchar* restrict mask, const float threshold,
                              const int n) {
  const int i = get_global_id(0);
  if (i < n) mask[i] = in[i] > threshold ? 1 : 0;
}
