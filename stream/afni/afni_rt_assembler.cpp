// AfniRtAssembler: channel dealing, ZORDER slice placement, byte order and the protocol-1 header of each volume.
#include "stream/afni/afni_rt_assembler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "stream/protocol/checksum.hpp"
#include "stream/protocol_version.hpp"

namespace rtf::stream::afni {

void swap_samples(std::span<std::byte> data, size_t sample_bytes) {
  if (sample_bytes < 2) return;
  for (size_t at = 0; at + sample_bytes <= data.size(); at += sample_bytes) {
    std::reverse(data.begin() + static_cast<std::ptrdiff_t>(at),
                 data.begin() + static_cast<std::ptrdiff_t>(at + sample_bytes));
  }
}

AfniRtAssembler::AfniRtAssembler(AfniRtHeader header, std::string session, std::vector<std::string> run_ids)
    : header_(std::move(header)), session_(std::move(session)), run_ids_(std::move(run_ids)) {
  if (static_cast<int>(run_ids_.size()) != header_.num_channels) {
    throw std::invalid_argument(
        fmt::format("AFNI assembler: {} run ids for {} channels", run_ids_.size(), header_.num_channels));
  }
  if (!valid_id(session_)) throw std::invalid_argument(fmt::format("AFNI assembler: bad session id \"{}\"", session_));
  for (const std::string& id : run_ids_) {
    if (!valid_id(id)) throw std::invalid_argument(fmt::format("AFNI assembler: bad run id \"{}\"", id));
  }
  channels_.resize(run_ids_.size());
}

int64_t AfniRtAssembler::pending_slices() const {
  int64_t n = 0;
  for (const Channel& c : channels_) n += c.slices;
  return n;
}

std::optional<AfniRtVolume> AfniRtAssembler::add_image(std::span<const std::byte> image) {
  const auto image_bytes = static_cast<size_t>(header_.image_bytes());
  if (image.size() != image_bytes) {
    throw std::invalid_argument(fmt::format("AFNI image of {} bytes, expected {}", image.size(), image_bytes));
  }
  ++images_;
  const int channel = next_channel_;
  next_channel_ = (next_channel_ + 1) % header_.num_channels;
  if (!header_.per_slice()) return finish(channel, std::vector<std::byte>(image.begin(), image.end()));

  Channel& c = channels_[static_cast<size_t>(channel)];
  if (c.volume.empty()) c.volume.resize(static_cast<size_t>(header_.volume_bytes()));
  const int64_t k = header_.slice_position(c.slices);
  std::memcpy(c.volume.data() + static_cast<size_t>(k) * image_bytes, image.data(), image_bytes);
  if (++c.slices < header_.dims[2]) return std::nullopt;
  c.slices = 0;
  return finish(channel, std::exchange(c.volume, {}));
}

AfniRtVolume AfniRtAssembler::finish(int channel, std::vector<std::byte> payload) {
  Channel& c = channels_[static_cast<size_t>(channel)];
  if (header_.big_endian) swap_samples(payload, static_cast<size_t>(header_.sample_bytes()));
  AfniRtVolume v;
  v.channel = channel;
  VolumeHeader& h = v.header;
  h.protocol = kProtocolVersion;
  h.session = session_;
  h.run = run_ids_[static_cast<size_t>(channel)];
  h.index = c.volumes++;
  h.dims = header_.dims;
  h.voxel_mm = header_.voxel_mm;
  h.affine = header_.affine;
  h.datatype = header_.datatype;
  h.tr_s = header_.tr_s;
  h.slice_timing_s = header_.slice_timing_s;
  h.payload_bytes = payload.size();
  h.checksum = crc32(payload);
  v.payload = std::move(payload);
  return v;
}

}  // namespace rtf::stream::afni
