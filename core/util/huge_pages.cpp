// madvise(MADV_HUGEPAGE) on the aligned interior of a buffer.
#include "core/util/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace rtf {

void advise_huge_pages(const void* p, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (p == nullptr || end <= begin) return;
#ifdef MADV_HUGEPAGE
  (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // advice: failure changes nothing
#endif
}

}  // namespace rtf
