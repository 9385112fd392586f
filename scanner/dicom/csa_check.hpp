// Whether a Siemens CSA2 header (the "SV10" bytes of (0029,1010)) is whole and shaped as Siemens writes it, before
// GDCM's CSAHeader reads it (issue 18). Debian's GDCM (3.0.21) asserts, aborting the process, on CSA bytes it does not
// expect: an item count that is not a multiple of 6, an element or item marker other than 77/205, item lengths that
// disagree, a SyngoDT it does not map or whose VR differs, a VR of more than 2 characters, "SV10" without its 04 03 02
// 01, or counts and lengths that run past the end (it then reads uninitialised values). This walk checks exactly those,
// without decoding any value. Only the SV10 format is accepted: the older CSA1 and the DICOM-dataset forms are refused
// (no scanner still writes them for mosaics).
#pragma once

#include <string>
#include <string_view>

namespace rtf::dicom {

struct CsaCheck {
  bool ok = true;
  std::string problem;  // when not ok, e.g. "element 3 (SliceNormalVector): 7 items, not a multiple of 6"
};

CsaCheck check_csa_header(std::string_view bytes);

}  // namespace rtf::dicom
