// A scale-out job's key (ChunkJob::key) and its inputs' digests: a settings line naming every option that changes a
// result, then the inputs' bytes, hashed together (core/util/hash.hpp). Chunk files written under another key are not
// reused, so each command's settings line is part of its chunk files' format: a change to it makes every earlier run's
// chunks computed again (docs/scale.md).
#pragma once

#include <Eigen/Core>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace rtf {

// A value's or a contiguous list's bytes, viewed (valid while the value lives), for job_key.
template <typename T>
std::string_view bytes_of_value(const T& x) {
  static_assert(std::is_trivially_copyable_v<T>);
  return {reinterpret_cast<const char*>(&x), sizeof(T)};
}
template <typename T>
std::string_view bytes_of(std::span<const T> values) {
  static_assert(std::is_trivially_copyable_v<T>);
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}
template <typename T, typename A>
std::string_view bytes_of(const std::vector<T, A>& values) {
  return bytes_of(std::span<const T>(values.data(), values.size()));
}
// A dense Eigen matrix's or vector's coefficients in its storage order.
template <typename Derived>
std::string_view bytes_of(const Eigen::PlainObjectBase<Derived>& m) {
  using Scalar = typename Derived::Scalar;
  return bytes_of(std::span<const Scalar>(m.data(), static_cast<size_t>(m.size())));
}

// hash_hex of `first` (the settings line, or an earlier key) followed by `parts`: 32 hex characters.
std::string job_key(std::string_view first, const std::vector<std::string_view>& parts = {});

}  // namespace rtf
