// madvise(MADV_HUGEPAGE) on the aligned interior of a buffer.
#include "core/util/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace rtf {

void advise_huge_pages(const void* p, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto address = reinterpret_cast<uintptr_t>(p);
  const uintptr_t skip = (kHuge - address % kHuge) % kHuge;  // to the first 2 MiB boundary
  if (p == nullptr || bytes < skip + kHuge) return;
  const uintptr_t length = (bytes - skip) / kHuge * kHuge;
#ifdef MADV_HUGEPAGE
  // Advice: failure changes nothing. The pointer arithmetic stays on `p` (no integer-to-pointer cast).
  (void)madvise(const_cast<char*>(static_cast<const char*>(p)) + skip, length, MADV_HUGEPAGE);
#endif
}

}  // namespace rtf
