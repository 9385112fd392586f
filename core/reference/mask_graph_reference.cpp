// MaskGraph's index tables (mask_graph_reference.hpp).
#include "core/reference/mask_graph_reference.hpp"

#include <stdexcept>

namespace rtf::reference {

MaskGraph::MaskGraph(std::array<int64_t, 3> dims, const std::vector<uint8_t>& mask, int connectivity,
                     const std::string& who)
    : dims_(dims),
      reach_(connectivity == 6    ? 1
             : connectivity == 18 ? 2
                                  : 3) {
  if (connectivity != 6 && connectivity != 18 && connectivity != 26) {
    throw std::invalid_argument(who + ": connectivity must be 6, 18 or 26");
  }
  if (mask.size() != static_cast<size_t>(dims[0] * dims[1] * dims[2])) throw std::invalid_argument(who + ": mask size");
  masked_.assign(mask.size(), -1);
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0) {
      masked_[i] = static_cast<int64_t>(full_.size());
      full_.push_back(static_cast<int64_t>(i));
    }
  }
}

}  // namespace rtf::reference
