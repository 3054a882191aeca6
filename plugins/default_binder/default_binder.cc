#include "plugins/default_binder/default_binder.h"

#include "scheduler/framework/binding.h"

namespace tessel::default_binder {

absl::StatusOr<std::unique_ptr<DefaultBinder>> DefaultBinder::New(Handle& handle) {
  return std::make_unique<DefaultBinder>(handle);
}

Status DefaultBinder::Bind(CycleState& state, const Pod& pod, const std::string& node) {
  ClusterApi* api = handle_.api();
  if (api == nullptr) return Status::Error("no cluster API to bind with");
  absl::Status st = api->Bind(pod, node, BindingAnnotations(state));
  RecordBindResult(state, st);  // the typed answer, for the core (binding.h)
  if (!st.ok()) return Status::Error(std::string(st.message()));
  return Status::Ok();
}

}  // namespace tessel::default_binder
