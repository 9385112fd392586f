// Converts one volume of raw scanner voxels to float32 into a slot of the ring buffer.
//
// Memory layout: `raw` holds n voxels of SRC_TYPE (little-endian as uploaded, x fastest); `ring` is the
// ring buffer [capacity][n] float, and this volume goes to ring[slot * n + i].
// NDRange: 1D, global n rounded up to the local size.
// Defines: SRC_TYPE (uchar, short, ushort, int or float).

__kernel void convert_to_float(__global const SRC_TYPE* restrict raw, __global float* restrict ring, const int slot,
                               const int n) {
  const int i = get_global_id(0);
  if (i < n) ring[(size_t)slot * n + i] = convert_float(raw[i]);
}
