// Small pieces every plugin would otherwise write again: argument reading with field-named
// errors, and kube-scheduler's default score normalisation.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/framework/interface.h"
#include "yaml-cpp/yaml.h"

namespace tessel {

// Scales scores so the highest becomes 100 (reverse: the highest becomes 0, the lowest 100).
void DefaultNormalizeScore(NodeScoreList& scores, bool reverse = false);

// Reads plugin args. Each getter returns the fallback when the key is absent, and an
// InvalidArgument "args.<key>: ..." when it has the wrong type or fails `check`.
class ArgsReader {
 public:
  explicit ArgsReader(const YAML::Node& args) : args_(args) {}
  // Fails if args has keys outside `known` (catches typos in configurations).
  absl::Status OnlyKeys(std::initializer_list<std::string_view> known) const;
  absl::StatusOr<int64_t> Int(std::string_view key, int64_t fallback, int64_t min, int64_t max) const;
  absl::StatusOr<std::string> String(std::string_view key, std::string fallback) const;
  absl::StatusOr<bool> Bool(std::string_view key, bool fallback) const;
  YAML::Node Child(std::string_view key) const;

 private:
  YAML::Node args_;
};

}  // namespace tessel
