// The explicit plugin registry: plugin name -> factory. Factories validate their arguments and
// return an error naming the plugin and the field; nothing registers itself statically.
//
//   Registry r;
//   RETURN_IF_ERROR(r.Register(MyPlugin::kName, &MyPlugin::New));
//   Registry everything = InTreeRegistry();  // plugins/registry.h
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/framework/interface.h"
#include "yaml-cpp/yaml.h"

namespace tessel {

// `args` is the plugin's pluginConfig[].args node (Null when none was given).
using PluginFactory =
    std::function<absl::StatusOr<std::unique_ptr<Plugin>>(const YAML::Node& args, Handle& handle)>;

class Registry {
 public:
  // Fails if the name is taken.
  absl::Status Register(std::string_view name, PluginFactory factory);
  const PluginFactory* Find(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PluginFactory, std::less<>> factories_;
};

// Adapts `static absl::StatusOr<std::unique_ptr<T>> T::New(const YAML::Node&, Handle&)`.
// Plugins read args through ArgsReader (plugin_util.h), which never throws; a yaml-cpp
// conversion that throws anyway becomes an args error here instead of ending the process.
template <typename T>
PluginFactory FactoryOf() {
  return [](const YAML::Node& args, Handle& handle) -> absl::StatusOr<std::unique_ptr<Plugin>> {
    try {
      auto made = T::New(args, handle);
      if (!made.ok()) return made.status();
      return std::unique_ptr<Plugin>(std::move(*made));
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(std::string("args: ") + e.what());
    }
  };
}

}  // namespace tessel
