// Large host arrays whose sizing writes nothing: std::vector with an allocator that leaves new elements of trivially
// copyable types unwritten (their storage implicitly holds the objects), so that a 10^10-element array costs no serial
// zero-filling pass and its pages are first touched (faulted in) by the parallel pass that fills it. Every element
// must be written before it is read. Other types are default-initialised as usual.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace rtf {

template <typename T>
struct UninitialisedAllocator {
  using value_type = T;
  UninitialisedAllocator() = default;
  template <typename U>
  UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}  // NOLINT: rebinding converts implicitly
  T* allocate(size_t count) { return std::allocator<T>{}.allocate(count); }
  void deallocate(T* p, size_t count) noexcept { std::allocator<T>{}.deallocate(p, count); }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0 && std::is_trivially_copyable_v<U>) {
      // Left unwritten: the caller's parallel pass writes it first.
    } else if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
  template <typename U>
  bool operator==(const UninitialisedAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using HostArray = std::vector<T, UninitialisedAllocator<T>>;

// A HostArray equals a std::vector with the same values (found by argument-dependent lookup through the allocator).
template <typename T>
bool operator==(const HostArray<T>& a, const std::vector<T>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

}  // namespace rtf
