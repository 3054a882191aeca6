// YAML -> SchedulerConfig. yaml-cpp reports errors by exception; they are caught here and never
// leave this file.
#include "scheduler/framework/config.h"

#include "scheduler/util/file.h"

#include <fstream>
#include <sstream>

#include "scheduler/util/strings.h"

namespace tessel {
namespace {

absl::Status FieldError(std::string_view path, std::string_view why) {
  return absl::InvalidArgumentError(StrCat("scheduler configuration: ", path, ": ", why));
}

bool IsKnownPoint(std::string_view name) {
  if (name == "multiPoint") return true;
  for (std::string_view p : kExtensionPoints) {
    if (p == name) return true;
  }
  return false;
}

absl::StatusOr<PluginSet> ParsePluginSet(const YAML::Node& node, const std::string& path) {
  PluginSet set;
  if (!node.IsMap()) return FieldError(path, "expected a map with enabled/disabled");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const std::string list_path = StrCat(path, ".", key);
    if (key != "enabled" && key != "disabled") return FieldError(list_path, "unknown field");
    if (kv.second.IsNull()) continue;
    if (!kv.second.IsSequence()) return FieldError(list_path, "expected a list");
    for (size_t i = 0; i < kv.second.size(); ++i) {
      const YAML::Node& item = kv.second[i];
      const std::string item_path = StrCat(list_path, "[", i, "]");
      if (!item.IsMap() || !item["name"] || !item["name"].IsScalar()) {
        return FieldError(item_path, "expected {name: ..., weight: ...}");
      }
      PluginRef ref{.name = item["name"].as<std::string>()};
      if (item["weight"]) {
        if (key == "disabled") return FieldError(StrCat(item_path, ".weight"), "not allowed in disabled");
        int64_t w = 0;
        if (!YAML::convert<int64_t>::decode(item["weight"], w) || w < 1 || w > 100) {
          return FieldError(StrCat(item_path, ".weight"),
                            StrCat("must be an integer in 1..100, got \"",
                                         item["weight"].Scalar(), "\""));
        }
        ref.weight = w;
      }
      if (key == "enabled") {
        set.enabled.push_back(std::move(ref));
      } else {
        set.disabled.push_back(std::move(ref.name));
      }
    }
  }
  return set;
}

absl::StatusOr<ProfileConfig> ParseProfile(const YAML::Node& node, const std::string& path) {
  ProfileConfig profile;
  if (!node.IsMap()) return FieldError(path, "expected a map");
  if (node["schedulerName"]) profile.scheduler_name = node["schedulerName"].as<std::string>();
  if (profile.scheduler_name.empty()) return FieldError(StrCat(path, ".schedulerName"), "empty");
  if (const YAML::Node plugins = node["plugins"]; plugins && !plugins.IsNull()) {
    if (!plugins.IsMap()) return FieldError(StrCat(path, ".plugins"), "expected a map");
    for (const auto& kv : plugins) {
      const std::string point = kv.first.as<std::string>();
      const std::string point_path = StrCat(path, ".plugins.", point);
      if (!IsKnownPoint(point)) return FieldError(point_path, "unknown extension point");
      if (kv.second.IsNull()) continue;
      auto set = ParsePluginSet(kv.second, point_path);
      if (!set.ok()) return set.status();
      profile.plugins[point] = *std::move(set);
    }
  }
  if (const YAML::Node configs = node["pluginConfig"]; configs && !configs.IsNull()) {
    const std::string cfg_path = StrCat(path, ".pluginConfig");
    if (!configs.IsSequence()) return FieldError(cfg_path, "expected a list");
    for (size_t i = 0; i < configs.size(); ++i) {
      const YAML::Node& item = configs[i];
      const std::string item_path = StrCat(cfg_path, "[", i, "]");
      if (!item.IsMap() || !item["name"]) return FieldError(item_path, "expected {name: ..., args: {...}}");
      const std::string name = item["name"].as<std::string>();
      if (profile.plugin_args.contains(name)) {
        return FieldError(item_path, StrCat("args for \"", name, "\" given twice"));
      }
      profile.plugin_args.emplace(name, item["args"] ? YAML::Clone(item["args"]) : YAML::Node());
    }
  }
  return profile;
}

}  // namespace

absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml_text) {
  try {
    SchedulerConfig config;
    YAML::Node root = YAML::Load(std::string(yaml_text));
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    if (!root.IsMap()) return FieldError("(top level)", "expected a map");
    config.raw = root;
    if (root["kind"]) {
      const std::string kind = root["kind"].as<std::string>();
      if (kind != "TesselSchedulerConfiguration" && kind != "KubeSchedulerConfiguration") {
        return FieldError("kind", StrCat("unknown kind \"", kind,
                                               "\" (want TesselSchedulerConfiguration)"));
      }
    }
    if (root["parallelism"]) {
      int p = 0;
      if (!YAML::convert<int>::decode(root["parallelism"], p) || p < 0 || p > 256) {
        return FieldError("parallelism", "must be an integer in 0..256");
      }
      config.parallelism = p;
    }
    if (const YAML::Node profiles = root["profiles"]; profiles && !profiles.IsNull()) {
      if (!profiles.IsSequence()) return FieldError("profiles", "expected a list");
      for (size_t i = 0; i < profiles.size(); ++i) {
        auto profile = ParseProfile(profiles[i], StrCat("profiles[", i, "]"));
        if (!profile.ok()) return profile.status();
        for (const ProfileConfig& other : config.profiles) {
          if (other.scheduler_name == profile->scheduler_name) {
            return FieldError(StrCat("profiles[", i, "].schedulerName"),
                              StrCat("duplicate \"", other.scheduler_name, "\""));
          }
        }
        config.profiles.push_back(*std::move(profile));
      }
    }
    return config;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(StrCat("scheduler configuration: not valid YAML: ", e.what()));
  }
}

absl::StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseSchedulerConfig(*text);
}

ProfileConfig ResolveProfile(const ProfileConfig& profile, const ProfileConfig& defaults) {
  ProfileConfig out;
  out.scheduler_name = profile.scheduler_name;
  // yaml-cpp nodes are handles: assigning to one writes through to every copy, so args are
  // cloned and inserted, never assigned over the defaults'.
  for (const auto& [name, args] : defaults.plugin_args) out.plugin_args.emplace(name, YAML::Clone(args));
  for (const auto& [name, args] : profile.plugin_args) {
    out.plugin_args.erase(name);
    out.plugin_args.emplace(name, YAML::Clone(args));
  }
  std::vector<std::string> points(std::begin(kExtensionPoints), std::end(kExtensionPoints));
  points.push_back("multiPoint");
  for (const std::string& point : points) {
    PluginSet merged;
    auto user = profile.plugins.find(point);
    auto base = defaults.plugins.find(point);
    auto disabled = [&](const std::string& name) {
      if (user == profile.plugins.end()) return false;
      for (const std::string& d : user->second.disabled) {
        if (d == "*" || d == name) return true;
      }
      return false;
    };
    if (base != defaults.plugins.end()) {
      for (const PluginRef& ref : base->second.enabled) {
        if (!disabled(ref.name)) merged.enabled.push_back(ref);
      }
    }
    if (user != profile.plugins.end()) {
      for (const PluginRef& ref : user->second.enabled) {
        // Re-enabling a default plugin replaces it (so a weight can be changed).
        std::erase_if(merged.enabled, [&](const PluginRef& r) { return r.name == ref.name; });
        merged.enabled.push_back(ref);
      }
      merged.disabled = user->second.disabled;
    }
    if (!merged.enabled.empty() || !merged.disabled.empty()) out.plugins[point] = std::move(merged);
  }
  return out;
}

}  // namespace tessel
