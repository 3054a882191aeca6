// LineSplitter (the watch stream's framing): whatever the chunking, the lines delivered are the
// stream's complete non-empty lines in order; stopping ends delivery at once.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "scheduler/kube/line_splitter.h"

namespace tessel::kube {
namespace line_splitter_test {

std::vector<std::string> CompleteLines(const std::string& stream) {
  std::vector<std::string> lines;
  std::string current;
  for (char c : stream) {
    if (c != '\n') {
      current += c;
    } else if (!current.empty()) {
      lines.push_back(current);
      current.clear();
    }
  }
  return lines;
}

TEST_CASE("LineSplitter delivers the complete lines whatever the chunks", "[line_splitter]") {
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    std::mt19937_64 rng(seed);
    // Streams of short JSON-ish lines, empty lines and long lines, often without a final newline.
    std::string stream;
    const int lines = std::uniform_int_distribution<int>(0, 12)(rng);
    for (int i = 0; i < lines; ++i) {
      const int len = std::uniform_int_distribution<int>(0, i % 4 == 3 ? 3000 : 40)(rng);
      for (int j = 0; j < len; ++j) stream += static_cast<char>('a' + (j + i) % 26);
      stream += '\n';
    }
    if (seed % 3 == 0) stream += "{\"type\":\"ADDED\"";  // an unfinished line
    const std::vector<std::string> expected = CompleteLines(stream);

    LineSplitter splitter;
    std::vector<std::string> got;
    std::uniform_int_distribution<size_t> chunk(0, 1 + seed % 97);
    for (size_t pos = 0; pos < stream.size();) {
      const size_t n = std::min(chunk(rng), stream.size() - pos);
      REQUIRE(splitter.Feed(std::string_view(stream).substr(pos, n), [&](std::string_view line) {
        got.emplace_back(line);
        return true;
      }));
      pos += n;
    }
    INFO("seed " << seed);
    REQUIRE(got == expected);
    CHECK(splitter.pending_bytes() == (seed % 3 == 0 ? 15u : 0u));
  }
}

TEST_CASE("LineSplitter stops when the consumer says so", "[line_splitter]") {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    std::string stream;
    const int lines = std::uniform_int_distribution<int>(1, 10)(rng);
    for (int i = 0; i < lines; ++i) stream += "line-" + std::to_string(i) + "\n";
    const size_t stop_after = std::uniform_int_distribution<size_t>(1, lines)(rng);
    LineSplitter splitter;
    std::vector<std::string> got;
    bool stopped = false;
    std::uniform_int_distribution<size_t> chunk(1, 9);
    for (size_t pos = 0; pos < stream.size() && !stopped;) {
      const size_t n = std::min(chunk(rng), stream.size() - pos);
      stopped = !splitter.Feed(std::string_view(stream).substr(pos, n), [&](std::string_view l) {
        got.emplace_back(l);
        return got.size() < stop_after;
      });
      pos += n;
    }
    INFO("seed " << seed);
    CHECK(stopped);
    REQUIRE(got.size() == stop_after);
    CHECK(got.back() == "line-" + std::to_string(stop_after - 1));
  }
}

}  // namespace line_splitter_test
}  // namespace tessel::kube
