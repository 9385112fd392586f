// Session recording journal: the per-run journal.jsonl format (one JSON line per recorded volume, then an
// end-of-run line), CRC-32 of payloads, and decoding raw little-endian payloads to float32. See docs/recording.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/image/image.hpp"
#include "stream/protocol/checksum.hpp"  // crc32 of payloads

namespace rtf::stream {

inline constexpr double kGridToleranceMm = 1e-4;  // voxel size and affine agreement within a run (= protocol §3)
inline constexpr double kTrToleranceS = 1e-6;     // TR agreement within a run (= protocol §3)

// Why `grid` cannot join a run whose first volume had `first` (dims, voxel size, affine, xform code, TR,
// datatype); empty when it can.
std::string grid_mismatch(const ImageHeader& first, const ImageHeader& grid);

// One journaled volume: where its payload lies in volumes.bin and the grid it was recorded with.
struct JournalEntry {
  int64_t index = 0;
  uint64_t offset = 0;  // byte offset of the payload in volumes.bin
  uint64_t length = 0;  // payload bytes
  uint32_t crc32 = 0;   // CRC-32 of the payload
  ImageHeader grid;     // dims, voxel_mm, affine, xform_code, tr_s, source_type (num_volumes = 1)
  double received_s = 0.0;
};

// The JSON line for an entry, newline included.
std::string encode_journal_entry(const JournalEntry& entry);
// The end-of-run line, newline included: {"end_of_run": true, "volumes": N}.
std::string encode_end_of_run(int64_t volumes);

// What a journal file holds. Lines are separated by '\n'; a last line without its '\n' is a torn write
// (the process died while appending it) and is ignored, as is anything that does not parse.
struct JournalContents {
  std::vector<JournalEntry> entries;   // in file order
  bool ended = false;                  // an end-of-run line was found
  int64_t end_volumes = 0;             // its "volumes" value
  bool torn_tail = false;              // the file ended in an unterminated line
  uint64_t valid_bytes = 0;            // length of the file up to and including the last complete line
  std::vector<std::string> bad_lines;  // complete lines that could not be decoded: "line N: reason"
};

// Reads a journal; a missing file reads as empty. Throws std::runtime_error if the file cannot be read.
JournalContents read_journal(const std::filesystem::path& path);
// The same from a journal's bytes (e.g. read through a descriptor already open).
JournalContents parse_journal(std::string_view text);

// Converts one payload (little-endian, x fastest, `type`) to float32 values in `out` (out.size() voxels).
// The caller checks payload.size() == out.size() * bytes_per_voxel(type).
void decode_payload(DataType type, std::span<const std::byte> payload, std::span<float> out);

}  // namespace rtf::stream
