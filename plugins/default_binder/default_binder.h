// DefaultBinder (Bind): binds the pod through ClusterApi (POST pods/{name}/binding live; the
// simulated cluster in the bench) in one write, carrying the binding annotations that PreBind
// plugins left in the CycleState, and records the API's typed answer there for the core
// (scheduler/framework/binding.h).
#pragma once

#include "scheduler/framework/registry.h"

namespace tessel::default_binder {

class DefaultBinder final : public BindPlugin {
 public:
  static constexpr std::string_view kName = "DefaultBinder";
  static absl::StatusOr<std::unique_ptr<DefaultBinder>> New(Handle& handle);  // takes no args
  explicit DefaultBinder(Handle& handle) : handle_(handle) {}
  std::string_view Name() const override { return kName; }
  Status Bind(CycleState& state, const Pod& pod, const std::string& node) override;

 private:
  Handle& handle_;
};

}  // namespace tessel::default_binder
