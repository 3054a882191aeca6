// Registry bookkeeping.
#include "scheduler/framework/registry.h"

#include "scheduler/framework/plugin_util.h"
#include "scheduler/util/strings.h"

namespace tessel {

absl::Status Registry::Register(std::string_view name, PluginFactory factory) {
  auto [it, inserted] = factories_.emplace(std::string(name), std::move(factory));
  if (!inserted) return absl::AlreadyExistsError(StrCat("plugin \"", name, "\" is registered twice"));
  return absl::OkStatus();
}

absl::Status Registry::Replace(std::string_view name, PluginFactory factory) {
  auto it = factories_.find(name);
  if (it == factories_.end()) return absl::NotFoundError(StrCat("plugin \"", name, "\" is not registered"));
  it->second = std::move(factory);
  return absl::OkStatus();
}

const PluginFactory* Registry::Find(std::string_view name) const {
  auto it = factories_.find(name);
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories_) out.push_back(name);
  return out;
}

namespace registry_internal {

absl::Status CheckNoArgs(std::string_view plugin, const YAML::Node& args) {
  return ArgsReader::Of(plugin, args).OnlyKeys({});
}

absl::Status WithoutPluginName(std::string_view plugin, const absl::Status& status) {
  std::string message(status.message());
  const std::string prefix = StrCat(plugin, ": ");
  if (message.starts_with(prefix)) message.erase(0, prefix.size());
  return absl::Status(status.code(), message);
}

}  // namespace registry_internal
}  // namespace tessel
