// AfniRtAssembler: the images of one AFNI real-time run -> protocol-1 volumes. Images (slices in the 2D modes, whole
// volumes otherwise) go to the run's channels in turn, as plug_realtime deals them out; a channel's slices are placed
// by ZORDER (alt: 0, 2, 4, ..., 1, 3, ...). A completed volume is byte-swapped to little-endian if the header said
// MSB_FIRST and gets a VolumeHeader (session, the channel's run id, consecutive index, geometry, TR, slice timing,
// CRC-32). Memory layout of payloads: x fastest, then y, then z (AFNI's and NIfTI's order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stream/afni/afni_rt_header.hpp"
#include "stream/protocol/volume_header.hpp"

namespace rtf::stream::afni {

struct AfniRtVolume {
  int channel = 0;
  VolumeHeader header;
  std::vector<std::byte> payload;
};

class AfniRtAssembler {
 public:
  // run_ids: one per channel (header.num_channels of them), each a valid_id. Throws std::invalid_argument otherwise.
  AfniRtAssembler(AfniRtHeader header, std::string session, std::vector<std::string> run_ids);

  // One image of header().image_bytes() bytes (std::invalid_argument for another size). Returns the volume it
  // completes, if any.
  std::optional<AfniRtVolume> add_image(std::span<const std::byte> image);

  const AfniRtHeader& header() const { return header_; }
  const std::string& run_id(int channel) const { return run_ids_.at(static_cast<size_t>(channel)); }
  int64_t volumes(int channel) const { return channels_.at(static_cast<size_t>(channel)).volumes; }
  int64_t images() const { return images_; }
  // Slices received for volumes not yet complete (2D modes), over all channels.
  int64_t pending_slices() const;

 private:
  struct Channel {
    std::vector<std::byte> volume;  // the volume being filled (2D modes)
    int64_t slices = 0;             // slices of it received
    int64_t volumes = 0;            // volumes completed
  };
  AfniRtVolume finish(int channel, std::vector<std::byte> payload);

  AfniRtHeader header_;
  std::string session_;
  std::vector<std::string> run_ids_;
  std::vector<Channel> channels_;
  int next_channel_ = 0;
  int64_t images_ = 0;
};

// Swaps each sample_bytes-byte sample (2, 4 or 8) of `data` in place; 1 leaves it alone.
void swap_samples(std::span<std::byte> data, size_t sample_bytes);

}  // namespace rtf::stream::afni
