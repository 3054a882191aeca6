// Scheduler configuration, read from YAML shaped like kube-scheduler's
// KubeSchedulerConfiguration:
//
//   apiVersion: tessel.io/v1alpha1        # kubescheduler.config.k8s.io/v1 is accepted too
//   kind: TesselSchedulerConfiguration    # or KubeSchedulerConfiguration
//   parallelism: 2
//   profiles:
//   - schedulerName: tessel
//     plugins:
//       score:
//         disabled: [{name: NodeResourcesFit}]
//         enabled: [{name: GpuBinPack, weight: 5}]
//     pluginConfig:
//     - name: NodeResourcesFit
//       args: {scoringStrategy: {type: MostAllocated}}
//
// A profile starts from the default plugin set (plugins/defaults.h) for its points; `disabled`
// removes plugins by name ("*" removes all), `enabled` appends. `multiPoint` enables a plugin at
// every point it implements. Every error names the field, e.g. "profiles[0].plugins.score.enabled[1].weight".
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "yaml-cpp/yaml.h"

namespace tessel {

// Extension point names as they appear under `plugins:`.
inline constexpr std::string_view kExtensionPoints[] = {
    "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
    "reserve",   "permit",    "preBind", "bind"};

struct PluginRef {
  std::string name;
  int64_t weight = 1;  // score only
  bool operator==(const PluginRef&) const = default;
};

struct PluginSet {
  std::vector<PluginRef> enabled;
  std::vector<std::string> disabled;
};

struct ProfileConfig {
  std::string scheduler_name = "tessel";
  std::map<std::string, PluginSet, std::less<>> plugins;  // by extension point (and "multiPoint")
  std::map<std::string, YAML::Node, std::less<>> plugin_args;
};

struct SchedulerConfig {
  int parallelism = 0;  // 0: one worker per core
  std::vector<ProfileConfig> profiles;
  YAML::Node raw;       // the whole document, for settings read by later layers
};

absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml_text);
absl::StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string& path);

// Applies a profile's enabled/disabled lists on top of `defaults` (a profile from the default
// configuration): the result lists every point's plugins explicitly.
ProfileConfig ResolveProfile(const ProfileConfig& profile, const ProfileConfig& defaults);

}  // namespace tessel
