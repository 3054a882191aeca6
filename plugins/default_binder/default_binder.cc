#include "plugins/default_binder/default_binder.h"

#include "scheduler/framework/plugin_util.h"

namespace tessel::default_binder {

absl::StatusOr<std::unique_ptr<DefaultBinder>> DefaultBinder::New(const YAML::Node& args,
                                                                  Handle& handle) {
  if (absl::Status st = ArgsReader(args).OnlyKeys({}); !st.ok()) return st;
  return std::make_unique<DefaultBinder>(handle);
}

Status DefaultBinder::Bind(CycleState&, const Pod& pod, const std::string& node) {
  ClusterApi* api = handle_.api();
  if (api == nullptr) return Status::Error("no cluster API to bind with");
  // The API code travels with the failure: the core ends a deleted pod's life (kNotFound)
  // instead of retrying it.
  return Status::FromApi(api->Bind(pod, node));
}

}  // namespace tessel::default_binder
