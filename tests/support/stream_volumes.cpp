// int16 volumes of the ingest protocol for the stream tests (stream_volumes.hpp).
#include "tests/support/stream_volumes.hpp"

#include <cstring>
#include <utility>

#include "stream/protocol/checksum.hpp"

namespace rtf::test {

SentVolume int16_volume(const VolumeSpec& spec, int64_t index, const std::function<int16_t(size_t)>& sample) {
  SentVolume v;
  stream::VolumeHeader& h = v.header;
  h.session = spec.session;
  h.run = spec.run;
  h.index = index;
  h.dims = spec.dims;
  h.voxel_mm = spec.voxel_mm;
  h.affine = spec.affine;
  h.datatype = DataType::kInt16;
  h.tr_s = spec.tr_s;
  const auto samples = static_cast<size_t>(h.voxels());
  v.payload.resize(samples * sizeof(int16_t));
  for (size_t i = 0; i < samples; ++i) {
    const int16_t value = sample(i);
    std::memcpy(v.payload.data() + sizeof(int16_t) * i, &value, sizeof(int16_t));
  }
  h.payload_bytes = v.payload.size();
  h.checksum = stream::crc32(v.payload);
  return v;
}

stream::Reply send(stream::IngestCore& core, const SentVolume& volume) {
  auto payload = volume.payload;
  return core.handle_volume(volume.header, std::move(payload), stream::steady_now_ns());
}

stream::AcceptedVolume accepted(SentVolume volume) {
  stream::AcceptedVolume v;
  v.header = std::move(volume.header);
  v.payload = std::move(volume.payload);
  v.received_ns = v.written_ns = stream::steady_now_ns();
  return v;
}

}  // namespace rtf::test
