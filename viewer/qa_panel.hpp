// The QA panel (scanner-side monitoring, docs/viewer.md): the tSNR map over the axial slices, the carpet, the QA traces
// with their alarm thresholds and the volumes of flagged slices, the usable-data tally and the newest alarms. Draws
// into the current ImGui window; textures are rebuilt only when their data changed. UI thread only.
#pragma once

#include <cstdint>

#include "viewer/panel_support.hpp"
#include "viewer/viewer_data.hpp"

namespace rtf::viewer {

class QaPanel {
 public:
  // Records its parts in `layout` as qa:tsnr, qa:tsnr_scale, qa:carpet, plot:qa_* and qa:alarms.
  void draw(const ViewerData& data, Layout& layout);

 private:
  void rebuild(const ViewerData& data);
  void tsnr_mosaic(const ViewerData& data, float height, Layout& layout);
  void carpet(const ViewerData& data, float height, Layout& layout);
  void traces(const ViewerData& data, float height, Layout& layout);

  Texture tsnr_texture_, carpet_texture_;
  float tsnr_max_ = 1.0f;
  int64_t carpet_split_row_ = 0;
  // What the textures show: (restarts, version) of their data.
  int64_t tsnr_restarts_ = -1, carpet_restarts_ = -1;
  uint64_t tsnr_version_ = 0, carpet_version_ = 0;
};

}  // namespace rtf::viewer
