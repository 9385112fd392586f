// MAT-v5 data elements (long and small formats), miMATRIX numeric and cell arrays, miCOMPRESSED via zlib.
#include "core/io/mat_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <cstring>

namespace rtf::io {
namespace {

constexpr size_t kHeaderSize = 128;
constexpr int kMaxDepth = 16;

enum MiType : uint32_t {
  kMiInt8 = 1,
  kMiUint8 = 2,
  kMiInt16 = 3,
  kMiUint16 = 4,
  kMiInt32 = 5,
  kMiUint32 = 6,
  kMiSingle = 7,
  kMiDouble = 9,
  kMiInt64 = 12,
  kMiUint64 = 13,
  kMiMatrix = 14,
  kMiCompressed = 15,
};

constexpr int kCellClass = 1;
constexpr int kFirstNumericClass = 6;  // mxDOUBLE_CLASS; 7..15 single and the integer classes
constexpr int kLastNumericClass = 15;
constexpr uint32_t kComplexFlag = 0x0800;

struct Element {
  uint32_t type = 0;
  std::span<const uint8_t> data;
  size_t next = 0;  // offset of the following element
};

class Parser {
 public:
  explicit Parser(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(std::string_view what) const {
    throw ArrayFileError(fmt::format("{}: not a readable MAT-file: {}", source_, what));
  }

  static uint32_t u32(std::span<const uint8_t> b, size_t offset) {
    uint32_t v = 0;
    std::memcpy(&v, b.data() + offset, 4);  // little-endian files on little-endian hosts
    return v;
  }

  Element element(std::span<const uint8_t> b, size_t pos) const {
    if (pos > b.size() || b.size() - pos < 8) fail("a data element tag runs past the end");
    Element e;
    const uint32_t first = u32(b, pos);
    if ((first >> 16) != 0) {  // small data element: size in the upper half, up to 4 bytes of data
      e.type = first & 0xffffu;
      const uint32_t size = first >> 16;
      if (size > 4) fail(fmt::format("a small data element claims {} bytes", size));
      e.data = b.subspan(pos + 4, size);
      e.next = pos + 8;
      return e;
    }
    e.type = first;
    const uint64_t size = u32(b, pos + 4);
    if (size > b.size() - pos - 8) fail(fmt::format("a data element of {} bytes runs past the end", size));
    e.data = b.subspan(pos + 8, size);
    const uint64_t padded = e.type == kMiCompressed ? size : (size + 7) / 8 * 8;
    e.next = static_cast<size_t>(std::min<uint64_t>(pos + 8 + padded, b.size()));  // last padding may be absent
    return e;
  }

  // Contents of one miMATRIX element; returns its name through `name`.
  MatArray matrix(std::span<const uint8_t> b, std::string& name, int depth) const {
    if (depth > kMaxDepth) fail(fmt::format("cells nested more than {} deep", kMaxDepth));
    MatArray a;
    name.clear();
    if (b.empty()) {  // an empty cell element
      a.kind = MatArray::Kind::kNumeric;
      a.mat_class = kFirstNumericClass;
      a.dims = {0, 0};
      return a;
    }
    const Element flags = element(b, 0);
    if (flags.type != kMiUint32 || flags.data.size() != 8) fail("array flags are not two uint32 values");
    const uint32_t flag_word = u32(flags.data, 0);
    a.mat_class = static_cast<int>(flag_word & 0xffu);

    const Element dims = element(b, flags.next);
    if (dims.type != kMiInt32 || dims.data.size() < 8 || dims.data.size() % 4 != 0) fail("bad dimensions");
    uint64_t numel = 1;
    for (size_t i = 0; i < dims.data.size(); i += 4) {
      const auto d = static_cast<int32_t>(u32(dims.data, i));
      if (d < 0) fail(fmt::format("negative dimension {}", d));
      if (d != 0 && numel > kMaxArrayFileBytes / static_cast<uint64_t>(d)) fail("too many elements");
      numel *= static_cast<uint64_t>(d);
      a.dims.push_back(d);
    }

    const Element name_element = element(b, dims.next);
    if (name_element.type != kMiInt8) fail("the array name is not int8 text");
    name.assign(name_element.data.begin(), name_element.data.end());

    const bool numeric = a.mat_class >= kFirstNumericClass && a.mat_class <= kLastNumericClass;
    if (numeric && (flag_word & kComplexFlag) == 0) {
      a.kind = MatArray::Kind::kNumeric;
      a.values = values(element(b, name_element.next), numel, name);
    } else if (a.mat_class == kCellClass) {
      a.kind = MatArray::Kind::kCell;
      size_t pos = name_element.next;
      for (uint64_t i = 0; i < numel; ++i) {
        const Element cell = element(b, pos);
        if (cell.type != kMiMatrix) fail(fmt::format("cell {} of '{}' is not an array", i, name));
        std::string ignored;
        a.cells.push_back(matrix(cell.data, ignored, depth + 1));
        pos = cell.next;
      }
    }  // anything else stays kUnsupported
    return a;
  }

  std::vector<double> values(const Element& e, uint64_t numel, const std::string& name) const {
    const auto convert = [&]<typename T>(T /*tag*/) {
      if (e.data.size() != numel * sizeof(T)) {
        fail(fmt::format("'{}' has {} elements but {} bytes of {}-byte data", name, numel, e.data.size(), sizeof(T)));
      }
      std::vector<double> out(numel);
      for (uint64_t i = 0; i < numel; ++i) {
        T v;
        std::memcpy(&v, e.data.data() + i * sizeof(T), sizeof(T));
        out[i] = static_cast<double>(v);
      }
      return out;
    };
    switch (e.type) {
      case kMiInt8:
        return convert(int8_t{});
      case kMiUint8:
        return convert(uint8_t{});
      case kMiInt16:
        return convert(int16_t{});
      case kMiUint16:
        return convert(uint16_t{});
      case kMiInt32:
        return convert(int32_t{});
      case kMiUint32:
        return convert(uint32_t{});
      case kMiSingle:
        return convert(float{});
      case kMiDouble:
        return convert(double{});
      case kMiInt64:
        return convert(int64_t{});
      case kMiUint64:
        return convert(uint64_t{});
      default:
        fail(fmt::format("'{}' stores its values as data type {}, which is not numeric", name, e.type));
    }
  }

  std::vector<uint8_t> inflate_element(std::span<const uint8_t> in) const {
    std::vector<uint8_t> out(std::max<size_t>(in.size() * 4, 4096));
    z_stream zs{};
    if (inflateInit(&zs) != Z_OK) fail("zlib inflateInit failed");
    zs.next_in = const_cast<Bytef*>(in.data());  // zlib does not write its input
    zs.avail_in = static_cast<uInt>(in.size());
    int rc = Z_OK;
    while (rc == Z_OK) {
      if (zs.total_out == out.size()) {
        if (out.size() >= kMaxArrayFileBytes) {
          inflateEnd(&zs);
          fail("a compressed element inflates past the size limit");
        }
        out.resize(std::min<size_t>(out.size() * 2, kMaxArrayFileBytes));
      }
      zs.next_out = out.data() + zs.total_out;
      zs.avail_out = static_cast<uInt>(out.size() - zs.total_out);
      rc = inflate(&zs, Z_NO_FLUSH);
      if (rc == Z_BUF_ERROR && zs.avail_out != 0) break;  // input exhausted before the stream's end
      if (rc == Z_BUF_ERROR) rc = Z_OK;                   // output full: grow and go on
    }
    out.resize(zs.total_out);
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) fail(fmt::format("a compressed element does not inflate (zlib code {})", rc));
    return out;
  }

 private:
  std::string_view source_;
};

}  // namespace

int64_t MatArray::numel() const {
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;
  return n;
}

Eigen::MatrixXd MatArray::matrix() const {
  if (kind != Kind::kNumeric) throw ArrayFileError("a MAT cell or unsupported array is not a matrix");
  if (dims.size() != 2) throw ArrayFileError(fmt::format("a {}-dimensional MAT array is not a matrix", dims.size()));
  return Eigen::Map<const Eigen::MatrixXd>(values.data(), dims[0], dims[1]);
}

std::map<std::string, MatArray> parse_mat(std::span<const uint8_t> bytes, std::string_view source) {
  const Parser p(source);
  if (bytes.size() < kHeaderSize) p.fail("shorter than the 128-byte header");
  if (bytes[126] == 'M' && bytes[127] == 'I') p.fail("big-endian MAT-files are not supported");
  if (bytes[126] != 'I' || bytes[127] != 'M') p.fail("no MAT-file endian indicator (is it a v4 or v7.3/HDF5 file?)");
  if (bytes[124] != 0x00 || bytes[125] != 0x01) p.fail("version is not 0x0100");

  std::map<std::string, MatArray> variables;
  const auto add = [&](std::span<const uint8_t> matrix_bytes) {
    std::string name;
    MatArray a = p.matrix(matrix_bytes, name, 0);
    if (!variables.emplace(name, std::move(a)).second) p.fail(fmt::format("variable '{}' appears twice", name));
  };
  size_t pos = kHeaderSize;
  while (pos < bytes.size()) {
    const Element e = p.element(bytes, pos);
    if (e.type == kMiCompressed) {
      const std::vector<uint8_t> inflated = p.inflate_element(e.data);
      const Element inner = p.element(inflated, 0);
      if (inner.type != kMiMatrix) p.fail("a compressed element does not hold an array");
      add(inner.data);
    } else if (e.type == kMiMatrix) {
      add(e.data);
    }  // other top-level elements carry nothing we read
    pos = e.next;
  }
  return variables;
}

std::map<std::string, MatArray> read_mat(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return parse_mat(bytes, path.string());
}

}  // namespace rtf::io
