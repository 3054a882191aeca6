// The framing of a watch stream: the API server sends one JSON event per line, in chunks that
// split lines anywhere. LineSplitter reassembles complete lines from the chunks as they arrive.
//
//   LineSplitter lines;
//   bool more = lines.Feed(chunk, [](std::string_view line) { ...; return true; });
//
// Empty lines are skipped; a last line with no newline is never delivered (a watch event always
// ends with one). Each byte is scanned once, however small the chunks.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace tessel::kube {

class LineSplitter {
 public:
  // Hands each complete, non-empty line of `chunk` (joined with what earlier chunks left over) to
  // `on_line`, in order. Returns false as soon as `on_line` returns false (the rest is dropped).
  bool Feed(std::string_view chunk, const std::function<bool(std::string_view)>& on_line);

  // Bytes held of a line whose newline has not arrived yet.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::string pending_;
};

}  // namespace tessel::kube
