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
//
// A kube-scheduler configuration (kind KubeSchedulerConfiguration, apiVersion
// kubescheduler.config.k8s.io/v1beta1 .. v1) is read too, with these top-level settings:
//
//   clientConnection: {kubeconfig: FILE, qps: 50, burst: 100, contentType: application/json}
//   leaderElection: {leaderElect: true, leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s,
//                    resourceLock: leases, resourceName: tessel-scheduler, resourceNamespace: kube-system}
//   podInitialBackoffSeconds: 1
//   podMaxBackoffSeconds: 10
//   percentageOfNodesToScore: 0       # read; Tessel scores every feasible node (see `notes`)
//
// A field Tessel does not know is an error naming its path; so is a kube-scheduler field Tessel
// does not support (extenders, healthzBindAddress, ...), with what to use instead.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
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

// `clientConnection`. An unset field leaves the command-line flag (or its default) in force.
struct ClientConnectionConfig {
  std::optional<std::string> kubeconfig;
  std::optional<double> qps;      // > 0
  std::optional<int64_t> burst;   // >= 1
  std::optional<std::string> content_type;          // Tessel always sends JSON (see notes)
  std::optional<std::string> accept_content_types;  // Tessel always accepts JSON (see notes)
};

// `leaderElection`. An unset field leaves the command-line flag (or its default) in force.
// When all three durations are given, renewDeadline < leaseDuration and retryPeriod <
// renewDeadline are checked here; main.cc checks the merged values.
struct LeaderElectionConfig {
  std::optional<bool> leader_elect;
  std::optional<absl::Duration> lease_duration;
  std::optional<absl::Duration> renew_deadline;
  std::optional<absl::Duration> retry_period;
  std::optional<std::string> resource_lock;  // only "leases"
  std::optional<std::string> resource_name;
  std::optional<std::string> resource_namespace;
};

struct SchedulerConfig {
  int parallelism = 0;  // 0: one worker per core
  std::vector<ProfileConfig> profiles;
  ClientConnectionConfig client_connection;
  LeaderElectionConfig leader_election;
  // The scheduling queue's backoff (kube-scheduler's defaults).
  absl::Duration pod_initial_backoff = absl::Seconds(1);
  absl::Duration pod_max_backoff = absl::Seconds(10);
  // As given (top level; 0..100). Tessel scores every feasible node whatever its value.
  std::optional<int64_t> percentage_of_nodes_to_score;
  // Settings that were read but that Tessel honours differently from kube-scheduler, one
  // sentence each, for the scheduler to log at start (e.g. percentageOfNodesToScore).
  std::vector<std::string> notes;
  YAML::Node raw;  // the whole document as read (every field in it was validated above)
};

absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml_text);
absl::StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string& path);

// Applies a profile's enabled/disabled lists on top of `defaults` (a profile from the default
// configuration): the result lists every point's plugins explicitly.
ProfileConfig ResolveProfile(const ProfileConfig& profile, const ProfileConfig& defaults);

}  // namespace tessel
