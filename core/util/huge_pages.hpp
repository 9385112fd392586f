// Large host buffers backed by transparent huge pages where the kernel allows it (madvise mode): the first write to a
// fresh 4 KiB page costs a fault, and a dense connectome's host buffers (10^10 edges: ~100 GB of candidates, ~80 GB of
// CSR) would otherwise spend most of their time in the faults of one thread (measured: ~0.4 GB/s on the development
// machine, against several GB/s with 2 MiB pages). Advice only: without huge pages nothing changes.
#pragma once

#include <cstddef>
#include <vector>

namespace rtf {

// madvise(MADV_HUGEPAGE) on the 2 MiB-aligned part of [p, p + bytes); ignored where unsupported.
void advise_huge_pages(const void* p, size_t bytes);

// v.reserve(n), the reserved memory advised (before it is first written).
template <typename T, typename A>
void reserve_huge(std::vector<T, A>& v, size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

}  // namespace rtf
