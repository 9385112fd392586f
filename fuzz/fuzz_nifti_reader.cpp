// libFuzzer target for the NIfTI reader: rtfmri-fuzz-nifti (built with -DRTF_BUILD_FUZZ=ON, see scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>

#include "fuzz/nifti_fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return rtf::fuzz::fuzz_nifti_one_input(data, size);
}
