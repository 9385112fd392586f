// The QA panel (scanner-side monitoring, docs/viewer.md): the tSNR and CNR maps over the axial slices, the carpet, the
// QA traces with their alarm thresholds and the volumes of flagged slices, the usable-data tally and the newest alarms.
// Draws into the current ImGui window; textures are rebuilt only when their data changed. UI thread only.
#pragma once

#include <cstdint>
#include <span>

#include "viewer/panel_support.hpp"
#include "viewer/viewer_data.hpp"

namespace rtf::viewer {

class QaPanel {
 public:
  // Records its parts in `layout` as qa:tsnr, qa:tsnr_scale, qa:cnr, qa:cnr_scale (with a CNR map), qa:carpet,
  // plot:qa_* and qa:alarms.
  void draw(const ViewerData& data, Layout& layout);

 private:
  // A map's mosaic texture and its colour scale's top, and what the texture shows: (restarts, version) of its data.
  struct MapTexture {
    Texture texture;
    float maximum = 1.0f;
    int64_t restarts = -1;
    uint64_t version = 0;
  };
  enum class MapChoice { kTsnr, kCnr, kBoth };

  void rebuild(const ViewerData& data);
  void maps(const ViewerData& data, float height, Layout& layout);
  // One map's mosaic (kind: "tsnr" or "cnr") in a box of `width` x `height` with its colour scale to the right.
  void mosaic(const ViewerData& data, MapTexture& map, std::span<const float> values, const char* kind, float width,
              float height, Layout& layout);
  void carpet(const ViewerData& data, float height, Layout& layout);
  void traces(const ViewerData& data, float height, Layout& layout);

  MapTexture tsnr_, cnr_;
  MapChoice choice_ = MapChoice::kBoth;  // with a CNR map; the tSNR map alone without one
  Texture carpet_texture_;
  int64_t carpet_split_row_ = 0;
  int64_t carpet_restarts_ = -1;
  uint64_t carpet_version_ = 0;
};

}  // namespace rtf::viewer
