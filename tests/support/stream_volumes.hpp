// Volumes of the ingest protocol for the stream tests: an int16 volume on a small grid as a sender makes it (header,
// payload, the length and checksum that match), handed to an IngestCore, or as IngestCore hands it on to the live
// stage.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stream/protocol/messages.hpp"
#include "stream/protocol/volume_header.hpp"
#include "stream/server/ingest_core.hpp"

namespace rtf::test {

// Who sends the volume and on which grid. The defaults are the live-stage tests' (7x5x3 of 2 mm, identity affine,
// TR 1 s).
struct VolumeSpec {
  std::string session = "s";
  std::string run = "r";
  std::array<int64_t, 3> dims{7, 5, 3};
  std::array<double, 3> voxel_mm{2.0, 2.0, 2.0};
  std::array<std::array<double, 4>, 4> affine{{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}};
  double tr_s = 1.0;
};

// A VOLUME message as a sender makes it.
struct SentVolume {
  stream::VolumeHeader header;
  std::vector<std::byte> payload;
};

// Volume `index` of int16 samples sample(0), sample(1), ... (called in that order; x fastest, host byte order), the
// header's payload_bytes and checksum matching the payload.
SentVolume int16_volume(const VolumeSpec& spec, int64_t index, const std::function<int16_t(size_t)>& sample);

// The volume handed to `core` as if its last frame arrived now (the payload copied).
stream::Reply send(stream::IngestCore& core, const SentVolume& volume);

// The volume as IngestCore hands it on: received and written now, no durability stamp.
stream::AcceptedVolume accepted(SentVolume volume);

}  // namespace rtf::test
