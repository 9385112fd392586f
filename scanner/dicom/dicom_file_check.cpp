// The element walk of dicom_file_check.hpp: lengths only, never values (PS3.5 §7: data element encoding; §7.5: nested
// data sets; §A.4: encapsulated pixel data).
#include "scanner/dicom/dicom_file_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string_view>

#include "scanner/dicom/file_window.hpp"

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

// The bytes [pos, pos + count) of the file (count <= FileWindow::kMaxSpan), which the caller checked lie within its
// size: a file that no longer holds them was cut short while it was read (a console rewriting it).
const unsigned char* bytes_at(FileWindow& file, size_t pos, size_t count) {
  const unsigned char* p = file.at(pos, count);
  if (p == nullptr) throw Truncated{fmt::format("the file could not be read at byte {} (cut short meanwhile?)", pos)};
  return p;
}

uint16_t u16_at(FileWindow& file, size_t pos, bool big) {
  const unsigned char* b = bytes_at(file, pos, 2);
  return big ? static_cast<uint16_t>(b[0] << 8 | b[1]) : static_cast<uint16_t>(b[0] | b[1] << 8);
}

uint32_t u32_at(FileWindow& file, size_t pos, bool big) {
  return big ? (uint32_t{u16_at(file, pos, true)} << 16 | u16_at(file, pos + 2, true))
             : (uint32_t{u16_at(file, pos, false)} | uint32_t{u16_at(file, pos + 2, false)} << 16);
}

std::string text_at(FileWindow& file, size_t pos, size_t count) {
  return {reinterpret_cast<const char*>(bytes_at(file, pos, count)), count};
}

// Walks the elements through the file's window: only tags, VRs and lengths are read, values are skipped over.
class Walker {
 public:
  Walker(FileWindow& file, bool explicit_vr, bool big_endian)
      : f_(file), size_(static_cast<size_t>(file.size())), explicit_vr_(explicit_vr), big_endian_(big_endian) {}

  // Elements from `pos` to the end of the file (the top-level data set).
  void top_level(size_t pos) {
    while (pos < size_) pos = element(pos, 0, explicit_vr_, nullptr);
  }
  bool saw_pixel_data() const { return pixel_data_; }
  uint64_t native_pixel_bytes() const { return native_pixel_bytes_; }

 private:
  void need(size_t pos, size_t count, const char* what) const {
    if (pos + count > size_) {
      throw Truncated{fmt::format("the file ends inside {} at byte {} of {}", what, size_, pos + count)};
    }
  }
  uint16_t u16(size_t pos, bool big) const { return u16_at(f_, pos, big); }
  uint32_t u32(size_t pos, bool big) const { return u32_at(f_, pos, big); }
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
    std::string vr_text;
    std::string_view vr;
    size_t header = 8;
    uint32_t length = 0;
    if (explicit_vr) {
      vr_text = text_at(f_, pos + 4, 2);
      vr = vr_text;
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
    if (t == kPixelData && depth == 0) {
      pixel_data_ = true;
      if (length != kUndefined) native_pixel_bytes_ = length;
    }
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

  FileWindow& f_;
  size_t size_;
  bool explicit_vr_, big_endian_;
  bool pixel_data_ = false;
  uint64_t native_pixel_bytes_ = 0;
};

DicomFileCheck result(DicomFileCheck::Status status, const std::string& why, const std::string& syntax = {}) {
  DicomFileCheck r;
  r.status = status;
  r.reason = why;
  r.transfer_syntax = syntax;
  return r;
}

// The file meta group from byte 132 (explicit VR little endian, always): its TransferSyntaxUID in *syntax; returns the
// position after the group.
size_t meta_group(FileWindow& file, std::string& syntax) {
  const size_t size = static_cast<size_t>(file.size());
  size_t pos = 132;
  while (pos + 8 <= size) {
    const unsigned char* b = bytes_at(file, pos, 8);
    if (b[0] != 0x02 || b[1] != 0x00) break;
    const uint16_t element = static_cast<uint16_t>(b[2] | b[3] << 8);
    const std::string vr = text_at(file, pos + 4, 2);
    if (!known_vr(vr)) {  // GDCM asserts on it
      throw Malformed{fmt::format("meta element (0002,{:04X}) has VR '{}{}', not a DICOM VR", element, printable(vr[0]),
                                  printable(vr[1]))};
    }
    const bool long_form = long_form_vr(vr);
    if (long_form && pos + 12 > size) throw Truncated{"the file ends inside its meta information"};
    const uint32_t length = long_form ? u32_at(file, pos + 8, false) : u16_at(file, pos + 6, false);
    const size_t value = pos + (long_form ? 12 : 8);
    if (length == kUndefined || value + length > size) throw Truncated{"the file ends inside its meta information"};
    if (element == 0x0010) {
      // A UID has at most 64 characters: a longer "syntax" is read as far as that, and matches none.
      syntax = text_at(file, value, std::min<size_t>(length, 80));
      while (!syntax.empty() && (syntax.back() == '\0' || syntax.back() == ' ')) syntax.pop_back();
    }
    pos = value + length;
  }
  return pos;
}

// The first bytes say whether the file can be DICOM at all: a part-10 preamble and marker, or a bare data set starting
// with a group 0008 element. Anything else is decided on these bytes alone, whatever the file's size.
DicomFileCheck walk(FileWindow& file) {
  using Status = DicomFileCheck::Status;
  const size_t size = static_cast<size_t>(file.size());
  const size_t head_size = std::min<size_t>(size, 132);
  const std::string head = head_size == 0 ? std::string() : text_at(file, 0, head_size);
  const bool part10 = head.size() == 132 && head.compare(128, 4, "DICM") == 0;
  const bool bare = !part10 && head.size() >= 8 && head[0] == 0x08 && head[1] == 0x00;
  if (!part10 && !bare) {
    // Shorter than preamble + marker: a file still being written (the preamble is zeros, or GE's binary header), unless
    // it is text (a note, a log, a JSON sidecar) or the marker's place holds something else.
    const bool text = !head.empty() && std::all_of(head.begin(), head.end(), [](char c) {
      return std::isprint(static_cast<unsigned char>(c)) != 0 || std::isspace(static_cast<unsigned char>(c)) != 0;
    });
    const bool marker_so_far = head.size() <= 128 || std::string_view("DICM").starts_with(head.substr(128));
    if (head.size() < 132 && !text && marker_so_far) {
      return result(Status::kTruncated, "shorter than a DICOM preamble (still being written?)");
    }
    return result(Status::kNotDicom, "not a DICOM file (no DICM marker)");
  }
  std::string syntax;
  try {
    size_t pos = 0;
    bool explicit_vr = true, big_endian = false;
    if (part10) {
      pos = meta_group(file, syntax);
      if (pos + 8 > size) throw Truncated{"the file ends after its meta information"};
      // Without one, GDCM guesses the encoding (big endian, say) and may allocate what its lengths then say.
      if (syntax.empty())
        throw Malformed{"no TransferSyntaxUID (0002,0010) in a file meta group after its DICM marker"};
      if (syntax == "1.2.840.10008.1.2.1.99") return result(Status::kComplete, {}, syntax);  // deflated: GDCM inflates
      explicit_vr = syntax != "1.2.840.10008.1.2";
      big_endian = syntax == "1.2.840.10008.1.2.2";
    } else {
      explicit_vr = std::isupper(static_cast<unsigned char>(head[4])) != 0 &&
                    std::isupper(static_cast<unsigned char>(head[5])) != 0;
    }
    Walker walker(file, explicit_vr, big_endian);
    walker.top_level(pos);
    if (!walker.saw_pixel_data()) throw Truncated{"the file ends before its pixel data"};
    DicomFileCheck complete = result(Status::kComplete, {}, syntax);
    complete.native_pixel_bytes = walker.native_pixel_bytes();
    return complete;
  } catch (const Truncated& t) {
    return result(Status::kTruncated, t.what, syntax);
  } catch (const Malformed& m) {
    return result(Status::kMalformed, m.what, syntax);
  }
}

}  // namespace

DicomFileCheck check_dicom_file(const std::filesystem::path& path) {
  FileWindow file(path);
  if (!file.ok()) return result(DicomFileCheck::Status::kNotDicom, "cannot be opened: " + file.error());
  DicomFileCheck check = walk(file);
  check.bytes_read = file.bytes_read();
  return check;
}

}  // namespace rtf::dicom
