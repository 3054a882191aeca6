// Registry bookkeeping.
#include "scheduler/framework/registry.h"

#include "scheduler/util/strings.h"

namespace tessel {

absl::Status Registry::Register(std::string_view name, PluginFactory factory) {
  auto [it, inserted] = factories_.emplace(std::string(name), std::move(factory));
  if (!inserted) return absl::AlreadyExistsError(StrCat("plugin \"", name, "\" is registered twice"));
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

}  // namespace tessel
