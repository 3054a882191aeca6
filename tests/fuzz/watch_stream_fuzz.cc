// libFuzzer target: the watch stream as the informer receives it. The input is cut into chunks
// (sizes drawn from the input's last 8 bytes) and fed through LineSplitter
// (scheduler/kube/line_splitter.h). The lines are not decoded here: the decode target feeds the
// same decoders, and leaving JSON out makes this target fast enough for long campaigns.
// Checked for every input:
//   - the lines delivered are exactly the input's complete non-empty lines, whatever the chunks;
//   - a consumer that stops after k lines receives exactly k.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/kube/line_splitter.h"

namespace {

std::vector<std::string> CompleteLines(std::string_view stream) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = stream.find('\n', start)) != std::string_view::npos; start = nl + 1) {
    if (nl > start) lines.emplace_back(stream.substr(start, nl - start));
  }
  return lines;
}

// Feeds `stream` in random chunks; `stop_after` lines, then the consumer asks to stop.
std::vector<std::string> Split(std::string_view stream, uint64_t seed, size_t stop_after) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> chunk_size(0, 1 + seed % 64);
  tessel::kube::LineSplitter splitter;
  std::vector<std::string> lines;
  auto on_line = [&](std::string_view line) {
    lines.emplace_back(line);
    return lines.size() < stop_after;
  };
  for (size_t pos = 0; pos < stream.size();) {
    const size_t n = std::min(chunk_size(rng), stream.size() - pos);
    if (!splitter.Feed(stream.substr(pos, n), on_line)) break;
    pos += n;
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t seed = 0;
  if (size >= sizeof(seed)) {
    std::memcpy(&seed, data + size - sizeof(seed), sizeof(seed));
    size -= sizeof(seed);
  }
  const std::string_view stream(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> expected = CompleteLines(stream);
  if (Split(stream, seed, SIZE_MAX) != expected) std::abort();
  if (!expected.empty()) {
    const size_t k = 1 + seed % expected.size();
    const std::vector<std::string> stopped = Split(stream, seed ^ 0x9e3779b97f4a7c15ULL, k);
    if (stopped.size() != k) std::abort();
  }
  return 0;
}
