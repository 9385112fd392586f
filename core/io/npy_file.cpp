// .npy header parsing (the Python dict literal NumPy writes), float64 payload, Fortran-to-C reordering; .npz
// through the zip reader.
#include "core/io/npy_file.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <limits>
#include <optional>

#include "core/io/zip_archive.hpp"

namespace rtf::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct Header {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;
};

// Recursive-descent reader for the header dict: {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  Header parse() {
    Header h;
    expect('{');
    while (!peek('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        h.descr = quoted();
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
      } else if (key == "shape") {
        h.shape = tuple();
      } else {
        fail(fmt::format("unexpected key '{}'", key));
      }
      if (!peek(',')) break;
      expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != text_.size()) fail("text after the closing brace");
    if (!h.descr || !h.fortran_order || !h.shape) fail("'descr', 'fortran_order' or 'shape' is missing");
    return h;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw ArrayFileError(fmt::format("{}: bad .npy header at character {}: {}", source_, pos_, what));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])) != 0) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  std::string quoted() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) fail("expected a quoted string");
    const char quote = text_[pos_++];
    const size_t close = text_.find(quote, pos_);
    if (close == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_, close - pos_));
    pos_ = close + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (!peek(')')) {
      int64_t v = 0;
      size_t digits = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("dimension too large");
        v = v * 10 + (text_[pos_++] - '0');
        ++digits;
      }
      if (digits == 0) fail("expected a dimension");
      if (dims.size() >= 32) fail("more than 32 dimensions");
      dims.push_back(v);
      if (!peek(',')) break;
      expect(',');
    }
    expect(')');
    return dims;
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
};

uint64_t read_le(std::span<const uint8_t> b, size_t offset, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= static_cast<uint64_t>(b[offset + i]) << (8 * i);
  return v;
}

}  // namespace

Eigen::MatrixXd NpyArray::matrix() const {
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  if (shape.size() > 2) throw ArrayFileError(fmt::format("a rank-{} array is not a matrix", shape.size()));
  const Eigen::Index rows = shape.empty() ? 1 : shape[0];
  const Eigen::Index cols = shape.size() == 2 ? shape[1] : 1;
  return Eigen::Map<const RowMajor>(values.data(), rows, cols);
}

NpyArray parse_npy(std::span<const uint8_t> bytes, std::string_view source) {
  const auto fail = [&](std::string_view what) -> void {
    throw ArrayFileError(fmt::format("{}: not a readable .npy array: {}", source, what));
  };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) fail("no NUMPY magic");
  const uint8_t major = bytes[6];
  if (major < 1 || major > 3) fail(fmt::format("format version {} is not supported", major));
  const size_t length_width = major == 1 ? 2 : 4;
  const size_t header_start = 8 + length_width;
  if (bytes.size() < header_start) fail("truncated header length");
  const uint64_t header_length = read_le(bytes, 8, length_width);
  if (header_length > bytes.size() - header_start) fail("header runs past the end");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + header_start), header_length);
  const Header header = HeaderParser(text, source).parse();
  if (*header.descr != "<f8") fail(fmt::format("dtype '{}' is not supported (only '<f8')", *header.descr));

  NpyArray array;
  array.shape = *header.shape;
  uint64_t count = 1;
  for (const int64_t d : array.shape) {
    if (d != 0 && count > kMaxArrayFileBytes / 8 / static_cast<uint64_t>(d)) fail("too many elements");
    count *= static_cast<uint64_t>(d);
  }
  const uint64_t data_start = header_start + header_length;
  if (bytes.size() - data_start != count * 8) {
    fail(fmt::format("shape needs {} bytes of data, the file has {}", count * 8, bytes.size() - data_start));
  }
  std::vector<double> raw(count);
  if (count > 0) std::memcpy(raw.data(), bytes.data() + data_start, count * 8);  // x86/ARM hosts are little-endian

  if (!*header.fortran_order || array.shape.size() < 2) {
    array.values = std::move(raw);
    return array;
  }
  // Fortran order: first index fastest. Walk the C-order positions with a running multi-index.
  const size_t rank = array.shape.size();
  std::vector<uint64_t> fortran_stride(rank, 1);
  for (size_t d = 1; d < rank; ++d) fortran_stride[d] = fortran_stride[d - 1] * array.shape[d - 1];
  std::vector<int64_t> index(rank, 0);
  array.values.resize(count);
  for (uint64_t c = 0; c < count; ++c) {
    uint64_t f = 0;
    for (size_t d = 0; d < rank; ++d) f += index[d] * fortran_stride[d];
    array.values[c] = raw[f];
    for (size_t d = rank; d-- > 0;) {  // increment, last index fastest
      if (++index[d] < array.shape[d]) break;
      index[d] = 0;
    }
  }
  return array;
}

NpyArray read_npy(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return parse_npy(bytes, path.string());
}

std::map<std::string, NpyArray> read_npz(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  std::map<std::string, NpyArray> arrays;
  for (const auto& [name, member] : read_zip_members(bytes, path.string())) {
    std::string key = name;
    if (key.size() > 4 && key.ends_with(".npy")) key.resize(key.size() - 4);
    arrays.emplace(key, parse_npy(member, fmt::format("{}[{}]", path.string(), name)));
  }
  return arrays;
}

}  // namespace rtf::io
