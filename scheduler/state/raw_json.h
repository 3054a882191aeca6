// Reading the objects the cluster-object store keeps as raw JSON (the DRA kinds) at floors that do
// not decode them (reports, quota charges): a field of an object, or null when there is none; a
// string, or "" when it is not one. Never throws.
//
//   const json& devices = RawField(RawField(*raw.json, "spec"), "devices");
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace tessel {

inline const nlohmann::json& RawField(const nlohmann::json& object, const char* name) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(name);
  return it == object.end() ? kNull : *it;
}

inline std::string RawString(const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : std::string(); }

}  // namespace tessel
