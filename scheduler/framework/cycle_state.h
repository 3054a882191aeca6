// Per-cycle scratch space shared by the plugins of one scheduling cycle: a PreFilter computes
// something once, Filter/Score read it for every node. Values must be cloneable so that
// preemption can evaluate "what if these pods were gone" on a copy.
//
//   struct PreFilterState : StateData { ... Clone() ... };
//   state.Write("NodeResourcesFit", std::make_unique<PreFilterState>(...));
//   const auto* s = state.Read<PreFilterState>("NodeResourcesFit");
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "scheduler/util/strings.h"

namespace tessel {

struct StateData {
  virtual ~StateData() = default;
  virtual std::unique_ptr<StateData> Clone() const = 0;
};

// Most state is a plain value: CopyableState<T> makes it cloneable with no boilerplate.
template <typename T>
struct CopyableState final : StateData {
  explicit CopyableState(T v) : value(std::move(v)) {}
  std::unique_ptr<StateData> Clone() const override { return std::make_unique<CopyableState>(value); }
  T value;
};

class CycleState {
 public:
  CycleState() = default;
  CycleState(CycleState&&) = default;
  CycleState& operator=(CycleState&&) = default;

  void Write(std::string_view key, std::unique_ptr<StateData> data) {
    data_[std::string(key)] = std::move(data);
  }
  template <typename T>
  void WriteValue(std::string_view key, T value) {
    Write(key, std::make_unique<CopyableState<T>>(std::move(value)));
  }
  // Null when absent or of another type.
  template <typename T>
  const T* Read(std::string_view key) const {
    auto it = data_.find(key);
    return it == data_.end() ? nullptr : dynamic_cast<const T*>(it->second.get());
  }
  // For PreFilterExtensions, which update their plugin's state in place.
  template <typename T>
  T* ReadMutable(std::string_view key) {
    auto it = data_.find(key);
    return it == data_.end() ? nullptr : dynamic_cast<T*>(it->second.get());
  }
  template <typename T>
  const T* ReadValue(std::string_view key) const {
    const auto* s = Read<CopyableState<T>>(key);
    return s ? &s->value : nullptr;
  }
  template <typename T>
  T* ReadMutableValue(std::string_view key) {
    auto it = data_.find(key);
    if (it == data_.end()) return nullptr;
    auto* s = dynamic_cast<CopyableState<T>*>(it->second.get());
    return s ? &s->value : nullptr;
  }

  CycleState Clone() const {
    CycleState copy;
    for (const auto& [k, v] : data_) copy.data_[k] = v->Clone();
    copy.skip_filter = skip_filter;
    copy.skip_score = skip_score;
    return copy;
  }

  // Plugins whose PreFilter/PreScore returned Skip: the framework does not call their
  // Filter/Score for this pod.
  StringSet skip_filter;
  StringSet skip_score;

 private:
  StringKeyedMap<std::unique_ptr<StateData>> data_;
};

}  // namespace tessel
