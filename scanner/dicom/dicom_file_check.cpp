// The element walk of dicom_file_check.hpp: lengths only, never values (PS3.5 §7: data element encoding; §7.5: nested
// data sets; §A.4: encapsulated pixel data).
#include "scanner/dicom/dicom_file_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <string_view>
#include <vector>

namespace rtf::dicom {

namespace {

constexpr uint32_t kUndefined = 0xFFFFFFFFu;
constexpr uint32_t kItem = 0xFFFEE000u, kItemEnd = 0xFFFEE00Du, kSequenceEnd = 0xFFFEE0DDu;
constexpr uint32_t kPixelData = 0x7FE00010u;
constexpr int kMaxDepth = 64;

struct Truncated {
  std::string what;
};
struct Malformed {
  std::string what;
};

bool known_vr(std::string_view vr) {
  static constexpr std::string_view kVrs[] = {"AE", "AS", "AT", "CS", "DA", "DS", "DT", "FD", "FL", "IS", "LO", "LT",
                                              "OB", "OD", "OF", "OL", "OV", "OW", "PN", "SH", "SL", "SQ", "SS", "ST",
                                              "SV", "TM", "UC", "UI", "UL", "UN", "UR", "US", "UT", "UV"};
  return std::find(std::begin(kVrs), std::end(kVrs), vr) != std::end(kVrs);
}

// VRs whose length takes 4 bytes after 2 reserved ones (PS3.5 §7.1.2).
bool long_form_vr(std::string_view vr) {
  return vr == "OB" || vr == "OD" || vr == "OF" || vr == "OL" || vr == "OV" || vr == "OW" || vr == "SQ" || vr == "SV" ||
         vr == "UC" || vr == "UN" || vr == "UR" || vr == "UT" || vr == "UV";
}

char printable(char c) {
  return std::isprint(static_cast<unsigned char>(c)) != 0 ? c : '?';
}

class Walker {
 public:
  Walker(const std::vector<unsigned char>& bytes, bool explicit_vr, bool big_endian)
      : b_(bytes), explicit_vr_(explicit_vr), big_endian_(big_endian) {}

  // Elements from `pos` to the end of the file (the top-level data set).
  void top_level(size_t pos) {
    while (pos < b_.size()) pos = element(pos, 0, explicit_vr_, nullptr);
  }
  bool saw_pixel_data() const { return pixel_data_; }

 private:
  void need(size_t pos, size_t count, const char* what) const {
    if (pos + count > b_.size()) {
      throw Truncated{fmt::format("the file ends inside {} at byte {} of {}", what, b_.size(), pos + count)};
    }
  }
  uint16_t u16(size_t pos, bool big) const {
    return big ? static_cast<uint16_t>(b_[pos] << 8 | b_[pos + 1]) : static_cast<uint16_t>(b_[pos] | b_[pos + 1] << 8);
  }
  uint32_t u32(size_t pos, bool big) const {
    return big ? (uint32_t{u16(pos, true)} << 16 | u16(pos + 2, true))
               : (uint32_t{u16(pos, false)} | uint32_t{u16(pos + 2, false)} << 16);
  }
  uint32_t tag(size_t pos, bool big) const { return uint32_t{u16(pos, big)} << 16 | u16(pos + 2, big); }

  // One element at `pos` in a data set encoded with `explicit_vr`; returns the position after it. Sets *end_tag when
  // the element is an item or sequence delimiter (which the caller expects or rejects).
  size_t element(size_t pos, int depth, bool explicit_vr, uint32_t* end_tag) {
    const bool big = big_endian_ && explicit_vr;  // undefined-length UN content is implicit little endian
    need(pos, 8, "an element's tag and length");
    const uint32_t t = tag(pos, big);
    if (t == kItemEnd || t == kSequenceEnd) {
      if (end_tag == nullptr) throw Malformed{fmt::format("a delimiter outside any item or sequence at byte {}", pos)};
      *end_tag = t;
      return pos + 8;
    }
    if (t == kItem) throw Malformed{fmt::format("an item outside any sequence at byte {}", pos)};
    std::string_view vr;
    size_t header = 8;
    uint32_t length = 0;
    if (explicit_vr) {
      vr = std::string_view(reinterpret_cast<const char*>(&b_[pos + 4]), 2);
      // GDCM reads an unknown VR's length differently (4 bytes from the VR on) and may allocate gigabytes for it.
      if (!known_vr(vr)) {
        throw Malformed{fmt::format("element ({:04X},{:04X}) at byte {} has VR '{}{}', not a DICOM VR", t >> 16,
                                    t & 0xFFFF, pos, printable(vr[0]), printable(vr[1]))};
      }
      if (t == kPixelData && vr == "SQ") {  // GDCM asserts on it
        throw Malformed{fmt::format("pixel data (7FE0,0010) at byte {} with VR SQ", pos)};
      }
      if (long_form_vr(vr)) {
        need(pos, 12, "an element's length");
        header = 12;
        length = u32(pos + 8, big);
      } else {
        length = u16(pos + 6, big);
      }
    } else {
      length = u32(pos + 4, big);
    }
    const size_t value = pos + header;
    if (t == kPixelData && depth == 0) pixel_data_ = true;
    if (length != kUndefined) {
      need(value, length, fmt::format("element ({:04X},{:04X})", t >> 16, t & 0xFFFF).c_str());
      // GDCM parses the items of a defined-length sequence too (an SQ, or an implicit VR or UN value that starts with
      // an item): a length inside them that runs past their end makes it allocate gigabytes.
      const bool items = explicit_vr && vr != "UN" ? vr == "SQ" : length >= 8 && tag(value, false) == kItem;
      if (t != kPixelData && items) sequence_within(value, value + length, depth + 1, explicit_vr && vr != "UN");
      return value + length;
    }
    if (depth >= kMaxDepth) throw Malformed{"sequences nested deeper than 64"};
    if (t == kPixelData) return fragments(value);
    // A sequence of undefined length (SQ, or UN whose content is implicit VR little endian).
    return sequence(value, depth + 1, explicit_vr && vr != "UN");
  }

  size_t sequence(size_t pos, int depth, bool explicit_vr) {
    const bool big = big_endian_ && explicit_vr;
    while (true) {
      need(pos, 8, "a sequence");
      const uint32_t t = tag(pos, big);
      const uint32_t length = u32(pos + 4, big);
      if (t == kSequenceEnd) return pos + 8;
      if (t != kItem)
        throw Malformed{fmt::format("({:04X},{:04X}) where an item belongs, at byte {}", t >> 16, t & 0xFFFF, pos)};
      pos += 8;
      if (length != kUndefined) {
        need(pos, length, "an item");
        data_set_within(pos, pos + length, depth, explicit_vr);
        pos += length;
        continue;
      }
      pos = item_to_delimiter(pos, depth, explicit_vr);
    }
  }

  // An item's data set of undefined length, up to its delimiter; returns the position after it.
  size_t item_to_delimiter(size_t pos, int depth, bool explicit_vr) {
    while (true) {
      uint32_t end = 0;
      pos = element(pos, depth, explicit_vr, &end);
      if (end == kItemEnd) return pos;
      if (end == kSequenceEnd) throw Malformed{fmt::format("a sequence ends inside an item at byte {}", pos)};
    }
  }

  // The items of a sequence of defined length, bytes [pos, end) of the file (which holds them all): anything that
  // does not end exactly at `end` is malformed, not truncated.
  void sequence_within(size_t pos, size_t end, int depth, bool explicit_vr) {
    if (depth >= kMaxDepth) throw Malformed{"sequences nested deeper than 64"};
    const bool big = big_endian_ && explicit_vr;
    try {
      while (pos < end) {
        if (end - pos < 8) throw Malformed{fmt::format("{} bytes at the end of a sequence, no item", end - pos)};
        const uint32_t t = tag(pos, big);
        const uint32_t length = u32(pos + 4, big);
        if (t == kSequenceEnd && pos + 8 == end) return;
        if (t != kItem) {
          throw Malformed{fmt::format("({:04X},{:04X}) where an item belongs, at byte {}", t >> 16, t & 0xFFFF, pos)};
        }
        pos += 8;
        if (length == kUndefined) {
          pos = item_to_delimiter(pos, depth, explicit_vr);
        } else if (length > end - pos) {
          throw Malformed{fmt::format("an item at byte {} runs past the end of its sequence", pos - 8)};
        } else {
          data_set_within(pos, pos + length, depth, explicit_vr);
          pos += length;
        }
      }
      if (pos > end) throw Malformed{fmt::format("an item runs past the end of its sequence (byte {})", end)};
    } catch (const Truncated&) {
      throw Malformed{fmt::format("an element runs past the end of its sequence (byte {})", end)};
    }
  }

  // The elements of an item of defined length, bytes [pos, end) of the file: they must end exactly at `end`.
  void data_set_within(size_t pos, size_t end, int depth, bool explicit_vr) {
    try {
      while (pos < end) pos = element(pos, depth, explicit_vr, nullptr);
    } catch (const Truncated&) {
      throw Malformed{fmt::format("an element runs past the end of its item (byte {})", end)};
    }
    if (pos > end) throw Malformed{fmt::format("an element runs past the end of its item (byte {})", end)};
  }

  // Encapsulated pixel data: an offset table item and fragment items of defined length, then the sequence delimiter.
  size_t fragments(size_t pos) {
    while (true) {
      need(pos, 8, "encapsulated pixel data");
      const uint32_t t = tag(pos, big_endian_);
      const uint32_t length = u32(pos + 4, big_endian_);
      if (t == kSequenceEnd) return pos + 8;
      if (t != kItem || length == kUndefined) throw Malformed{fmt::format("a bad pixel data fragment at byte {}", pos)};
      need(pos + 8, length, "a pixel data fragment");
      pos += 8 + length;
    }
  }

  const std::vector<unsigned char>& b_;
  bool explicit_vr_, big_endian_;
  bool pixel_data_ = false;
};

DicomFileCheck result(DicomFileCheck::Status status, const std::string& why) {
  return {status, why, {}};
}

}  // namespace

DicomFileCheck check_dicom_file(const std::filesystem::path& path) {
  using Status = DicomFileCheck::Status;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return result(Status::kNotDicom, "cannot be opened");
  std::vector<unsigned char> bytes(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));  // it may have shrunk meanwhile
  const bool part10 = bytes.size() >= 132 && std::string_view(reinterpret_cast<const char*>(&bytes[128]), 4) == "DICM";
  const bool bare = !part10 && bytes.size() >= 8 && bytes[0] == 0x08 && bytes[1] == 0x00;
  if (!part10 && !bare) {
    // Shorter than preamble + marker: a file still being written (the preamble is zeros, or GE's binary header), unless
    // it is text (a note, a log, a JSON sidecar) or the marker's place holds something else.
    const bool text = !bytes.empty() && std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) {
      return std::isprint(c) != 0 || std::isspace(c) != 0;
    });
    const bool marker_so_far =
        bytes.size() <= 128 || std::string_view("DICM").starts_with(
                                   std::string_view(reinterpret_cast<const char*>(&bytes[128]), bytes.size() - 128));
    if (bytes.size() < 132 && !text && marker_so_far) {
      return result(Status::kTruncated, "shorter than a DICOM preamble (still being written?)");
    }
    return result(Status::kNotDicom, "not a DICOM file (no DICM marker)");
  }
  std::string syntax;
  try {
    size_t pos = 0;
    bool explicit_vr = true, big_endian = false;
    if (part10) {
      // The file meta group: explicit VR little endian, always.
      pos = 132;
      while (pos + 8 <= bytes.size() && bytes[pos] == 0x02 && bytes[pos + 1] == 0x00) {
        const size_t start = pos;
        const uint16_t element = static_cast<uint16_t>(bytes[pos + 2] | bytes[pos + 3] << 8);
        const std::string_view vr(reinterpret_cast<const char*>(&bytes[pos + 4]), 2);
        if (!known_vr(vr)) {  // GDCM asserts on it
          throw Malformed{fmt::format("meta element (0002,{:04X}) has VR '{}{}', not a DICOM VR", element,
                                      printable(vr[0]), printable(vr[1]))};
        }
        const bool long_form = long_form_vr(vr);
        if (long_form && pos + 12 > bytes.size()) throw Truncated{"the file ends inside its meta information"};
        const uint32_t length = long_form ? static_cast<uint32_t>(bytes[pos + 8] | bytes[pos + 9] << 8 |
                                                                  bytes[pos + 10] << 16 | bytes[pos + 11] << 24)
                                          : static_cast<uint32_t>(bytes[pos + 6] | bytes[pos + 7] << 8);
        const size_t value = start + (long_form ? 12 : 8);
        if (length == kUndefined || value + length > bytes.size()) {
          throw Truncated{"the file ends inside its meta information"};
        }
        if (element == 0x0010) {
          syntax.assign(reinterpret_cast<const char*>(&bytes[value]), length);
          while (!syntax.empty() && (syntax.back() == '\0' || syntax.back() == ' ')) syntax.pop_back();
        }
        pos = value + length;
      }
      if (pos + 8 > bytes.size()) throw Truncated{"the file ends after its meta information"};
      // Without one, GDCM guesses the encoding (big endian, say) and may allocate what its lengths then say.
      if (syntax.empty())
        throw Malformed{"no TransferSyntaxUID (0002,0010) in a file meta group after its DICM marker"};
      if (syntax == "1.2.840.10008.1.2.1.99") return {Status::kComplete, {}, syntax};  // deflated: GDCM inflates it
      explicit_vr = syntax != "1.2.840.10008.1.2";
      big_endian = syntax == "1.2.840.10008.1.2.2";
    } else {
      explicit_vr = std::isupper(bytes[4]) != 0 && std::isupper(bytes[5]) != 0;
    }
    Walker walker(bytes, explicit_vr, big_endian);
    walker.top_level(pos);
    if (!walker.saw_pixel_data()) throw Truncated{"the file ends before its pixel data"};
  } catch (const Truncated& t) {
    return {Status::kTruncated, t.what, syntax};
  } catch (const Malformed& m) {
    return {Status::kMalformed, m.what, syntax};
  }
  return {Status::kComplete, {}, syntax};
}

}  // namespace rtf::dicom
