// The explicit plugin registry: plugin name -> factory; nothing registers itself statically.
// A factory reads the plugin's args from YAML and makes the plugin. In-tree plugins parse their
// args into a typed struct (ParseArgs, errors naming the plugin and the field) and are made
// from it (New); FactoryOf adapts the two once for every plugin, and FactoryWith makes a
// plugin from args a program built itself (no YAML).
//
//   Registry r;
//   RETURN_IF_ERROR(r.Register(MyPlugin::kName, FactoryOf<MyPlugin>()));
//   Registry everything = InTreeRegistry();  // plugins/registry.h
//   RETURN_IF_ERROR(everything.Replace(GpuShare::kName, FactoryWith<GpuShare>({.annotate_devices = false})));
#pragma once

#include <concepts>
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
  // Swaps the factory of a registered plugin (FactoryWith: a plugin with ready-made args);
  // fails if none is registered under `name`.
  absl::Status Replace(std::string_view name, PluginFactory factory);
  const PluginFactory* Find(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PluginFactory, std::less<>> factories_;
};

// A plugin's typed args. A plugin that takes args declares, in its namespace and class,
//   struct GpuShareArgs { bool annotate_devices = true; };          // the defaults
//   using Args = GpuShareArgs;
//   static absl::StatusOr<Args> ParseArgs(const YAML::Node& args);   // "GpuShare: args.<field>: ..."
//   static absl::StatusOr<std::unique_ptr<GpuShare>> New(Args args, Handle& handle);
// and a plugin without args declares only `New(Handle&)`; any args given to it are an error.
template <typename T>
concept PluginWithArgs = requires(const YAML::Node& yaml) {
  typename T::Args;
  { T::ParseArgs(yaml) } -> std::same_as<absl::StatusOr<typename T::Args>>;
};

// The args of a plugin without any.
struct NoArgs {};

namespace registry_internal {
template <typename T>
struct ArgsOf {
  using type = NoArgs;
};
template <PluginWithArgs T>
struct ArgsOf<T> {
  using type = typename T::Args;
};
// Fails when a plugin that takes no args was given some.
absl::Status CheckNoArgs(std::string_view plugin, const YAML::Node& args);
// `status` without its leading "<plugin>: " (the framework names the plugin itself).
absl::Status WithoutPluginName(std::string_view plugin, const absl::Status& status);
}  // namespace registry_internal

template <typename T>
using ArgsOf = typename registry_internal::ArgsOf<T>::type;

// T's args read from a pluginConfig's args node (Null when none was given). yaml-cpp
// conversions that throw anyway (ArgsReader, plugin_util.h, never does) become args errors
// instead of ending the process.
template <typename T>
absl::StatusOr<ArgsOf<T>> ParsePluginArgs(const YAML::Node& yaml) {
  try {
    if constexpr (PluginWithArgs<T>) {
      return T::ParseArgs(yaml);
    } else {
      if (absl::Status st = registry_internal::CheckNoArgs(T::kName, yaml); !st.ok()) return st;
      return NoArgs{};
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(std::string(T::kName) + ": args: " + e.what());
  }
}

// T made from ready-made args.
template <typename T>
absl::StatusOr<std::unique_ptr<Plugin>> MakePlugin(ArgsOf<T> args, Handle& handle) {
  auto made = [&] {
    if constexpr (PluginWithArgs<T>) {
      return T::New(std::move(args), handle);
    } else {
      return T::New(handle);
    }
  }();
  if (!made.ok()) return made.status();
  return std::unique_ptr<Plugin>(*std::move(made));
}

// The factory of T for configurations: parses the args, then makes the plugin.
template <typename T>
PluginFactory FactoryOf() {
  return [](const YAML::Node& yaml, Handle& handle) -> absl::StatusOr<std::unique_ptr<Plugin>> {
    absl::StatusOr<ArgsOf<T>> args = ParsePluginArgs<T>(yaml);
    if (!args.ok()) return registry_internal::WithoutPluginName(T::kName, args.status());
    return MakePlugin<T>(*std::move(args), handle);
  };
}

// The factory of T with args the program has already made (a bench's typed settings), for
// Registry::Replace; a configuration that gives this plugin args as well is an error.
template <typename T>
PluginFactory FactoryWith(ArgsOf<T> args) {
  return [args = std::move(args)](const YAML::Node& yaml,
                                  Handle& handle) -> absl::StatusOr<std::unique_ptr<Plugin>> {
    if (yaml && !yaml.IsNull()) {
      return absl::InvalidArgumentError("args: this plugin's args are set by the program running it");
    }
    return MakePlugin<T>(args, handle);
  };
}

}  // namespace tessel
