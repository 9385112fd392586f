// ScaleOut: WorkersOpening waited for once, Workers::run with the stats kept, the report's "devices" object, and the
// commit followed by the chunk files' removal.
#include "core/scale/scale_out.hpp"

#include <stdexcept>
#include <system_error>

#include "core/scale/chunk_files.hpp"

namespace rtf {

ScaleOut::ScaleOut(const DeviceChoice& choice) : opening_(choice) {}

std::string ScaleOut::input(const std::string& path) const {
  return path.empty() ? path : ranks().local_input(path);
}

Workers& ScaleOut::workers() {
  if (!workers_) workers_.emplace(opening_.get());
  return *workers_;
}

std::vector<ChunkBytes> ScaleOut::run(const ChunkJob& job, const ChunkProgress& progress) {
  return workers().run(job, progress, &stats_);
}

nlohmann::json ScaleOut::devices_report(int64_t chunks, int64_t chunk_voxels) {
  Workers& w = workers();
  const nlohmann::json per_device = chunks_per_device(ranks(), stats_);
  return {{"total", w.total_devices()},   {"ranks", ranks().size()},         {"chunks", chunks},
          {"chunk_voxels", chunk_voxels}, {"chunks_per_device", per_device}, {"restored_chunks", stats_.restored},
          {"rank0", w.describe()}};
}

void ScaleOut::commit(io::OutputSet& outputs, const std::filesystem::path& chunks, bool only_chunk_files) const {
  if (!root()) throw std::logic_error("ScaleOut::commit: rank 0 writes the outputs");
  outputs.commit();
  if (chunks.empty()) return;
  if (only_chunk_files) {
    remove_chunk_files(chunks);
  } else {
    std::error_code ignored;  // the outputs are whole: a chunk file left behind costs only space
    std::filesystem::remove_all(chunks, ignored);
  }
}

}  // namespace rtf
