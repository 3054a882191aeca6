// What the binding cycle hands from plugin to plugin in the CycleState, so that a bind is one
// API write:
//   - binding annotations: a PreBind plugin adds the annotations the pod must carry (e.g.
//     GpuShare's tessel.io/gpu-devices); the Bind plugin sends them in the Binding object's
//     metadata.annotations, which the API server copies onto the pod with the bind itself.
//   - the bind result: the Bind plugin records the ClusterApi's typed answer (NotFound,
//     AlreadyExists, FailedPrecondition, Unavailable, ...), so the core can tell "the pod is
//     gone" from "try again" without reading a message.
//
//   AddBindingAnnotation(state, "tessel.io/gpu-devices", "0,3");      // PreBind
//   absl::Status st = api->Bind(pod, node, BindingAnnotations(state)); // Bind
//   RecordBindResult(state, st);
//   if (const absl::Status* r = BindResult(state); r && absl::IsNotFound(*r)) ...
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "scheduler/framework/cycle_state.h"
#include "scheduler/util/strings.h"

namespace tessel {

inline constexpr std::string_view kBindingAnnotationsKey = "framework/BindingAnnotations";
inline constexpr std::string_view kBindResultKey = "framework/BindResult";

inline void AddBindingAnnotation(CycleState& state, std::string_view key, std::string_view value) {
  StringMap* annotations = state.ReadMutableValue<StringMap>(kBindingAnnotationsKey);
  if (annotations == nullptr) {
    state.WriteValue(kBindingAnnotationsKey, StringMap{});
    annotations = state.ReadMutableValue<StringMap>(kBindingAnnotationsKey);
  }
  (*annotations)[std::string(key)] = std::string(value);
}

// The annotations PreBind plugins asked for (empty when none).
inline const StringMap& BindingAnnotations(const CycleState& state) {
  static const StringMap kNone;
  const StringMap* annotations = state.ReadValue<StringMap>(kBindingAnnotationsKey);
  return annotations != nullptr ? *annotations : kNone;
}

inline void RecordBindResult(CycleState& state, absl::Status result) {
  state.WriteValue(kBindResultKey, std::move(result));
}

// The ClusterApi's answer to the bind of this cycle; null when no bind was sent.
inline const absl::Status* BindResult(const CycleState& state) {
  return state.ReadValue<absl::Status>(kBindResultKey);
}

}  // namespace tessel
