// libFuzzer target for the ingest protocol's header parsers: rtfmri-fuzz-volume-header (scripts/fuzz.sh header).
// The checks live in header_fuzz_entry.hpp, shared with the corpus replay test.
#include <cstdio>
#include <cstdlib>

#include "fuzz/header_fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rtf::fuzz::HeaderOutcome outcome{};
  const std::string violation = rtf::fuzz::check_header_input(data, size, outcome);
  if (!violation.empty()) {
    std::fprintf(stderr, "invariant violated: %s\n", violation.c_str());
    std::abort();
  }
  return 0;
}
