// ctest-label: unit
// advise_huge_pages marks the 2 MiB-aligned interior of a large buffer for transparent huge pages: the mapping holding
// it shows the "hg" flag in /proc/self/smaps (skipped where the kernel has no transparent huge pages or smaps no
// VmFlags); null and small buffers are left alone without error; reserve_huge reserves what is asked.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "core/util/huge_pages.hpp"

namespace rtf {
namespace {

// The VmFlags of the mapping that holds `address` ("" when none is found).
std::string vm_flags_at(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= address && address < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST(HugePages, LargeBufferAdvised) {
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "no transparent huge pages in this kernel";
  }
  constexpr size_t kBytes = size_t{12} << 20;
  const std::unique_ptr<char[]> buffer(new char[kBytes]);
  const auto address = reinterpret_cast<uintptr_t>(buffer.get());
  const uintptr_t inner = (address + (uintptr_t{2} << 20)) & ~((uintptr_t{2} << 20) - 1);
  const std::string before = vm_flags_at(inner);
  if (before.empty()) GTEST_SKIP() << "/proc/self/smaps shows no VmFlags here";
  EXPECT_EQ(before.find(" hg"), std::string::npos) << before;
  advise_huge_pages(buffer.get(), kBytes);
  EXPECT_NE(vm_flags_at(inner).find(" hg"), std::string::npos) << vm_flags_at(inner);
  advise_huge_pages(nullptr, kBytes);
  advise_huge_pages(buffer.get(), 4096);  // no whole 2 MiB page inside: nothing to advise
}

TEST(HugePages, ReserveHuge) {
  std::vector<float> v;
  reserve_huge(v, 3u << 20);
  EXPECT_GE(v.capacity(), size_t{3} << 20);
  EXPECT_TRUE(v.empty());
}

}  // namespace
}  // namespace rtf
