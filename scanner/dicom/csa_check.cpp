// The CSA2 walk of csa_check.hpp. Layout (little endian int32 throughout): "SV10", 04 03 02 01, element count, 77;
// per element: name[64], VM, VR[4], SyngoDT, item count, 77 or 205; per item: four lengths (len, len, 77 or 205, len)
// and len bytes padded to a multiple of 4.
#include "scanner/dicom/csa_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>

namespace rtf::dicom {

namespace {

// The SyngoDT codes GDCM maps, each with the only VR it accepts beside it.
constexpr std::pair<uint32_t, std::string_view> kSyngoTypes[] = {
    {0, "UN"},  {3, "DS"},  {4, "FD"},  {5, "FL"},  {6, "IS"},  {7, "SL"},  {8, "SS"},  {9, "UL"},
    {10, "US"}, {16, "CS"}, {19, "LO"}, {20, "LT"}, {22, "SH"}, {23, "ST"}, {25, "UI"}, {27, "UT"}};

bool is_marker(uint32_t v) {
  return v == 77 || v == 205;
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : b_(bytes) {}
  bool has(size_t count) const { return count <= b_.size() - pos_; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int k = 3; k >= 0; --k) v = v << 8 | static_cast<unsigned char>(b_[pos_ + static_cast<size_t>(k)]);
    pos_ += 4;
    return v;
  }
  std::string_view take(size_t count) {
    const std::string_view s = b_.substr(pos_, count);
    pos_ += count;
    return s;
  }
  size_t pos() const { return pos_; }
  size_t size() const { return b_.size(); }

 private:
  std::string_view b_;
  size_t pos_ = 0;
};

CsaCheck bad(std::string problem) {
  return {false, std::move(problem)};
}

}  // namespace

CsaCheck check_csa_header(std::string_view bytes) {
  Reader r(bytes);
  if (!r.has(16)) return bad(fmt::format("{} bytes, shorter than a CSA2 header", bytes.size()));
  if (r.take(4) != "SV10") return bad("no \"SV10\" signature (not the CSA2 format)");
  if (r.take(4) != std::string_view("\4\3\2\1", 4)) return bad("\"SV10\" not followed by 04 03 02 01");
  const uint32_t elements = r.u32();
  if (r.u32() != 77) return bad("the element count is not followed by 77");
  for (uint32_t e = 0; e < elements; ++e) {
    const size_t at = r.pos();
    if (!r.has(84)) return bad(fmt::format("element {} of {} runs past the end ({} bytes)", e + 1, elements, r.size()));
    const std::string_view name_field = r.take(64);
    const std::string name(name_field.substr(0, std::min(name_field.find('\0'), name_field.size())));
    const auto where = [&] { return fmt::format("element {} ('{}', byte {})", e + 1, name, at); };
    r.take(4);  // VM
    const std::string_view vr = r.take(4);
    if (vr[2] != '\0') return bad(fmt::format("{}: a VR longer than 2 characters", where()));
    const uint32_t syngo_dt = r.u32();
    const auto type = std::find_if(std::begin(kSyngoTypes), std::end(kSyngoTypes),
                                   [&](const auto& t) { return t.first == syngo_dt; });
    if (type == std::end(kSyngoTypes)) return bad(fmt::format("{}: unknown SyngoDT {}", where(), syngo_dt));
    if (vr.substr(0, std::min<size_t>(vr.find('\0'), 2)) != type->second) {
      return bad(fmt::format("{}: VR '{}' with SyngoDT {} (which is {})", where(),
                             vr.substr(0, std::min<size_t>(vr.find('\0'), 2)), syngo_dt, type->second));
    }
    const uint32_t items = r.u32();
    if (items % 6 != 0) return bad(fmt::format("{}: {} items, not a multiple of 6", where(), items));
    if (!is_marker(r.u32())) return bad(fmt::format("{}: no 77/205 marker after its item count", where()));
    for (uint32_t i = 0; i < items; ++i) {
      if (!r.has(16)) return bad(fmt::format("{}: item {} of {} runs past the end", where(), i + 1, items));
      const uint32_t l0 = r.u32(), l1 = r.u32(), marker = r.u32(), l3 = r.u32();
      if (!is_marker(marker)) return bad(fmt::format("{}: item {} has no 77/205 marker", where(), i + 1));
      if (l0 != l1 || l1 != l3) {
        return bad(fmt::format("{}: item {} lengths disagree ({}, {}, {})", where(), i + 1, l0, l1, l3));
      }
      const size_t padded = (size_t{l1} + 3) / 4 * 4;
      if (!r.has(padded)) {
        return bad(fmt::format("{}: item {} of {} bytes runs past the end", where(), i + 1, l1));
      }
      r.take(padded);
    }
  }
  return {};
}

}  // namespace rtf::dicom
