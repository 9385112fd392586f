// Progress lines with the time left (core/util/progress_log.hpp).
#include "core/util/progress_log.hpp"

#include <spdlog/spdlog.h>

namespace rtf {

void ProgressLog::operator()(int64_t done, int64_t total) {
  const double s = clock_.seconds();
  if ((s - last_ < every_ && done < total) || done <= 0) return;
  last_ = s;
  spdlog::info("{} {}/{}, {:.1f} s, about {:.0f} s left", what_, done, total, s,
               s / static_cast<double>(done) * static_cast<double>(total - done));
}

}  // namespace rtf
