// Converts a uchar mask to float 0/1 (input of the certainty smoothing in masked smoothing).
//
// Memory layout: `mask` and `out` are one volume of n voxels, x fastest. NDRange: global n (rounded up).

__kernel void mask_to_float(__global const uchar* restrict mask, __global float* restrict out, const int n) {
  const int i = get_global_id(0);
  if (i < n) out[i] = mask[i] ? 1.0f : 0.0f;
}
