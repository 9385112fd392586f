// Journal line encoding/decoding, journal file reading (torn tails tolerated), CRC-32 and payload decoding.
#include "stream/recording/journal.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/image/voxel_decode.hpp"

namespace rtf::stream {

static_assert(std::endian::native == std::endian::little, "payload decoding assumes a little-endian host");

namespace {

DataType data_type_from_code(int code) {
  const auto type = static_cast<DataType>(code);
  if (bytes_per_voxel(type) == 0) throw std::runtime_error("unknown datatype code " + std::to_string(code));
  return type;
}

JournalEntry decode_entry(const nlohmann::json& j) {
  JournalEntry e;
  e.index = j.at("index").get<int64_t>();
  e.offset = j.at("offset").get<uint64_t>();
  e.length = j.at("length").get<uint64_t>();
  e.crc32 = j.at("crc32").get<uint32_t>();
  e.grid.dims = j.at("dims").get<std::array<int64_t, 3>>();
  e.grid.voxel_mm = j.at("voxel_mm").get<std::array<double, 3>>();
  const auto rows = j.at("affine").get<std::array<std::array<double, 4>, 4>>();
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) e.grid.affine(r, c) = rows[static_cast<size_t>(r)][static_cast<size_t>(c)];
  }
  e.grid.xform_code = j.value("xform_code", 1);
  e.grid.source_type = data_type_from_code(j.at("datatype_code").get<int>());
  e.grid.tr_s = j.at("tr_s").get<double>();
  e.grid.num_volumes = 1;
  e.received_s = j.value("received_s", 0.0);
  for (int64_t d : e.grid.dims) {
    if (d < 1) throw std::runtime_error("non-positive dimension");
  }
  return e;
}

}  // namespace

std::string grid_mismatch(const ImageHeader& first, const ImageHeader& g) {
  if (g.dims != first.dims) {
    return fmt::format("dims {}x{}x{} differ from the run's {}x{}x{}", g.dims[0], g.dims[1], g.dims[2], first.dims[0],
                       first.dims[1], first.dims[2]);
  }
  if (g.source_type != first.source_type) {
    return fmt::format("datatype {} differs from the run's {}", to_string(g.source_type), to_string(first.source_type));
  }
  for (size_t a = 0; a < 3; ++a) {
    if (std::abs(g.voxel_mm[a] - first.voxel_mm[a]) > kGridToleranceMm) {
      return fmt::format("voxel size {} mm on axis {} differs from the run's {} mm", g.voxel_mm[a], a,
                         first.voxel_mm[a]);
    }
  }
  if ((g.affine - first.affine).cwiseAbs().maxCoeff() > kGridToleranceMm) return "affine differs from the run's";
  if (g.xform_code != first.xform_code) return "xform code differs from the run's";
  if (std::abs(g.tr_s - first.tr_s) > kTrToleranceS) {
    return fmt::format("TR {} s differs from the run's {} s", g.tr_s, first.tr_s);
  }
  return {};
}

std::string encode_journal_entry(const JournalEntry& e) {
  nlohmann::json affine = nlohmann::json::array();
  for (int r = 0; r < 4; ++r) {
    affine.push_back({e.grid.affine(r, 0), e.grid.affine(r, 1), e.grid.affine(r, 2), e.grid.affine(r, 3)});
  }
  const nlohmann::json j = {{"index", e.index},
                            {"offset", e.offset},
                            {"length", e.length},
                            {"crc32", e.crc32},
                            {"dims", e.grid.dims},
                            {"voxel_mm", e.grid.voxel_mm},
                            {"affine", affine},
                            {"xform_code", e.grid.xform_code},
                            {"datatype", to_string(e.grid.source_type)},
                            {"datatype_code", static_cast<int>(e.grid.source_type)},
                            {"tr_s", e.grid.tr_s},
                            {"received_s", e.received_s}};
  return j.dump() + "\n";
}

std::string encode_end_of_run(int64_t volumes) {
  return nlohmann::json{{"end_of_run", true}, {"volumes", volumes}}.dump() + "\n";
}

JournalContents read_journal(const std::filesystem::path& path) {
  JournalContents contents;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return contents;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string() + ": " + std::strerror(errno));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read " + path.string());
  return parse_journal(text);
}

JournalContents parse_journal(std::string_view text) {
  JournalContents contents;
  size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {  // unterminated: the write was cut short
      contents.torn_tail = true;
      break;
    }
    ++line_number;
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    contents.valid_bytes = start;
    if (line.empty()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.value("end_of_run", false)) {
        contents.ended = true;
        contents.end_volumes = j.value("volumes", int64_t{0});
      } else {
        contents.entries.push_back(decode_entry(j));
      }
    } catch (const std::exception& e) {
      contents.bad_lines.push_back("line " + std::to_string(line_number) + ": " + e.what());
    }
  }
  return contents;
}

void decode_payload(DataType type, std::span<const std::byte> payload, std::span<float> out) {
  decode_voxels(type, payload, out);  // little-endian host (asserted above), no scaling
}

}  // namespace rtf::stream
