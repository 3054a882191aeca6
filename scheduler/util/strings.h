// String building for Tessel. Debian 12's Abseil is built with its own absl::string_view (not
// std::string_view), so absl::StrCat cannot take the std::string_view used throughout Tessel.
// These thin wrappers over {fmt} accept std::string, std::string_view, absl::string_view,
// integers and anything else fmt can format.
//
//   std::string s = StrCat("pod ", key, " needs ", milli, "m");
//   StrAppend(&s, "; ", more);
//   std::string list = StrJoin(names, ", ");
#pragma once

#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/string_view.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<std::string_view> {
  auto format(absl::string_view s, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(std::string_view(s.data(), s.size()), ctx);
  }
};

namespace tessel {

template <typename... Args>
void StrAppend(std::string* out, const Args&... args) {
  (fmt::format_to(std::back_inserter(*out), "{}", args), ...);
}

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  StrAppend(&out, args...);
  return out;
}

// "1 node", "3 nodes": `n` with the word for one or for many.
inline std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return StrCat(n, " ", n == 1 ? one : many);
}

template <typename Range>
std::string StrJoin(const Range& items, std::string_view separator) {
  return fmt::format("{}", fmt::join(items, separator));
}

// Hash maps and sets keyed by std::string that can be searched with a std::string_view
// (absl's hash containers only take absl::string_view for heterogeneous lookup).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringKeyedMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;
using StringSet = std::unordered_set<std::string, StringHash, std::equal_to<>>;

// absl::string_view (e.g. absl::Status::message()) as std::string_view.
inline std::string_view ToStd(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace tessel
