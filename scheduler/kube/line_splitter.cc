// LineSplitter: see line_splitter.h.
#include "scheduler/kube/line_splitter.h"

namespace tessel::kube {

bool LineSplitter::Feed(std::string_view chunk,
                        const std::function<bool(std::string_view)>& on_line) {
  // Lines wholly inside the chunk are handed over without copying; only a line that spans
  // chunks goes through pending_.
  size_t start = 0;
  if (!pending_.empty()) {
    const size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      pending_.append(chunk);
      return true;
    }
    pending_.append(chunk.substr(0, nl));
    std::string line = std::move(pending_);
    pending_.clear();
    start = nl + 1;
    if (!on_line(line)) return false;
  }
  for (size_t nl; (nl = chunk.find('\n', start)) != std::string_view::npos; start = nl + 1) {
    std::string_view line = chunk.substr(start, nl - start);
    if (line.empty()) continue;
    if (!on_line(line)) return false;
  }
  pending_.assign(chunk.substr(start));
  return true;
}

}  // namespace tessel::kube
