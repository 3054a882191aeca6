// YAML -> SchedulerConfig. yaml-cpp reports errors by exception; they are caught here and never
// leave this file. Every value is read through the typed readers below, which name the field.
#include "scheduler/framework/config.h"

#include <algorithm>
#include <cmath>

#include "scheduler/util/file.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

constexpr std::string_view kTesselApiVersion = "tessel.io/v1alpha1";
constexpr std::string_view kKubeApiVersions[] = {
    "kubescheduler.config.k8s.io/v1beta1", "kubescheduler.config.k8s.io/v1beta2",
    "kubescheduler.config.k8s.io/v1beta3", "kubescheduler.config.k8s.io/v1"};
constexpr std::string_view kJson = "application/json";
constexpr std::string_view kProtobuf = "application/vnd.kubernetes.protobuf";

absl::Status FieldError(std::string_view path, std::string_view why) {
  return absl::InvalidArgumentError(StrCat("scheduler configuration: ", path, ": ", why));
}

std::string Child(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : StrCat(path, ".", key);
}

// A kube-scheduler field that Tessel rejects, and what to do instead.
struct Unsupported {
  std::string_view field;
  std::string_view instead;
};

// Fails on the first key of `map` outside `known`, naming its path.
absl::Status CheckFields(const YAML::Node& map, std::string_view path,
                         std::initializer_list<std::string_view> known,
                         std::initializer_list<Unsupported> unsupported = {}) {
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) {
      return FieldError(path.empty() ? "(top level)" : path, "a key is not a plain string");
    }
    const std::string& key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    for (const Unsupported& u : unsupported) {
      if (u.field == key) return FieldError(Child(path, key), StrCat("not supported by Tessel; ", u.instead));
    }
    return FieldError(Child(path, key), StrCat("unknown field (known: ", StrJoin(known, ", "), ")"));
  }
  return absl::OkStatus();
}

absl::Status ExpectMap(const YAML::Node& node, std::string_view path) {
  return node.IsMap() ? absl::OkStatus() : FieldError(path, "expected a map");
}

absl::StatusOr<std::string> ReadString(const YAML::Node& node, std::string_view path) {
  if (!node.IsScalar()) return FieldError(path, "expected a string");
  return node.Scalar();
}

absl::StatusOr<std::string> ReadNonEmptyString(const YAML::Node& node, std::string_view path) {
  ASSIGN_OR_RETURN(std::string s, ReadString(node, path));
  if (s.empty()) return FieldError(path, "empty");
  return s;
}

std::string Shown(const YAML::Node& node) {
  return node.IsScalar() ? StrCat("\"", node.Scalar(), "\"") : std::string("a non-scalar");
}

absl::StatusOr<int64_t> ReadInt(const YAML::Node& node, std::string_view path, int64_t min,
                                int64_t max) {
  int64_t v = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, v) || v < min || v > max) {
    return FieldError(path, StrCat("must be an integer in ", min, "..", max, ", got ", Shown(node)));
  }
  return v;
}

absl::StatusOr<bool> ReadBool(const YAML::Node& node, std::string_view path) {
  bool v = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, v)) {
    return FieldError(path, StrCat("must be true or false, got ", Shown(node)));
  }
  return v;
}

// A Go duration as kube-scheduler writes it ("15s", "1m30s", "500ms"); positive and finite.
absl::StatusOr<absl::Duration> ReadDuration(const YAML::Node& node, std::string_view path) {
  absl::Duration d;
  if (!node.IsScalar() || !absl::ParseDuration(node.Scalar(), &d) || d <= absl::ZeroDuration() ||
      d == absl::InfiniteDuration()) {
    return FieldError(path, StrCat("must be a positive duration like \"15s\", got ", Shown(node)));
  }
  return d;
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
  RETURN_IF_ERROR(CheckFields(node, path, {"enabled", "disabled"}));
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string list_path = StrCat(path, ".", key);
    if (kv.second.IsNull()) continue;
    if (!kv.second.IsSequence()) return FieldError(list_path, "expected a list");
    for (size_t i = 0; i < kv.second.size(); ++i) {
      const YAML::Node& item = kv.second[i];
      const std::string item_path = StrCat(list_path, "[", i, "]");
      if (!item.IsMap() || !item["name"]) return FieldError(item_path, "expected {name: ..., weight: ...}");
      RETURN_IF_ERROR(CheckFields(item, item_path, {"name", "weight"}));
      PluginRef ref;
      ASSIGN_OR_RETURN(ref.name, ReadNonEmptyString(item["name"], StrCat(item_path, ".name")));
      if (item["weight"]) {
        if (key == "disabled") return FieldError(StrCat(item_path, ".weight"), "not allowed in disabled");
        ASSIGN_OR_RETURN(ref.weight, ReadInt(item["weight"], StrCat(item_path, ".weight"), 1, 100));
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

// A plugin's args as the plugin reads them. kube-scheduler lets args name their own type
// (`kind: NodeResourcesFitArgs`, with an apiVersion); those two keys are checked and removed.
absl::StatusOr<YAML::Node> PluginArgs(const YAML::Node& item, const std::string& name,
                                      const std::string& path) {
  if (!item["args"] || item["args"].IsNull()) return YAML::Node();
  YAML::Node args = YAML::Clone(item["args"]);
  if (!args.IsMap()) return args;  // the plugin reports "args: expected a map"
  if (args["kind"]) {
    ASSIGN_OR_RETURN(std::string kind, ReadString(args["kind"], StrCat(path, ".kind")));
    if (kind != StrCat(name, "Args")) {
      return FieldError(StrCat(path, ".kind"), StrCat("\"", kind, "\" does not match plugin \"", name,
                                                      "\" (want ", name, "Args)"));
    }
    args.remove("kind");
  }
  if (args["apiVersion"]) {
    RETURN_IF_ERROR(ReadString(args["apiVersion"], StrCat(path, ".apiVersion")).status());
    args.remove("apiVersion");
  }
  return args;
}

void NoteNodesToScore(int64_t percentage, std::string_view path, std::vector<std::string>& notes) {
  if (percentage == 100) return;
  notes.push_back(StrCat(path, ": ", percentage,
                         " is read but not applied: Tessel filters and scores every node"));
}

absl::StatusOr<ProfileConfig> ParseProfile(const YAML::Node& node, const std::string& path,
                                           std::vector<std::string>& notes) {
  ProfileConfig profile;
  if (!node.IsMap()) return FieldError(path, "expected a map");
  RETURN_IF_ERROR(CheckFields(node, path,
                              {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"}));
  if (node["schedulerName"]) {
    ASSIGN_OR_RETURN(profile.scheduler_name,
                     ReadNonEmptyString(node["schedulerName"], StrCat(path, ".schedulerName")));
  }
  if (const YAML::Node pct = node["percentageOfNodesToScore"]; pct && !pct.IsNull()) {
    const std::string pct_path = StrCat(path, ".percentageOfNodesToScore");
    ASSIGN_OR_RETURN(int64_t p, ReadInt(pct, pct_path, 0, 100));
    NoteNodesToScore(p, pct_path, notes);
  }
  if (const YAML::Node plugins = node["plugins"]; plugins && !plugins.IsNull()) {
    RETURN_IF_ERROR(ExpectMap(plugins, StrCat(path, ".plugins")));
    for (const auto& kv : plugins) {
      if (!kv.first.IsScalar()) return FieldError(StrCat(path, ".plugins"), "a key is not a plain string");
      const std::string point = kv.first.Scalar();
      const std::string point_path = StrCat(path, ".plugins.", point);
      if (!IsKnownPoint(point)) return FieldError(point_path, "unknown extension point");
      if (kv.second.IsNull()) continue;
      ASSIGN_OR_RETURN(profile.plugins[point], ParsePluginSet(kv.second, point_path));
    }
  }
  if (const YAML::Node configs = node["pluginConfig"]; configs && !configs.IsNull()) {
    const std::string cfg_path = StrCat(path, ".pluginConfig");
    if (!configs.IsSequence()) return FieldError(cfg_path, "expected a list");
    for (size_t i = 0; i < configs.size(); ++i) {
      const YAML::Node& item = configs[i];
      const std::string item_path = StrCat(cfg_path, "[", i, "]");
      if (!item.IsMap() || !item["name"]) return FieldError(item_path, "expected {name: ..., args: {...}}");
      RETURN_IF_ERROR(CheckFields(item, item_path, {"name", "args"}));
      ASSIGN_OR_RETURN(std::string name, ReadNonEmptyString(item["name"], StrCat(item_path, ".name")));
      if (profile.plugin_args.contains(name)) {
        return FieldError(item_path, StrCat("args for \"", name, "\" given twice"));
      }
      ASSIGN_OR_RETURN(YAML::Node args, PluginArgs(item, name, StrCat(item_path, ".args")));
      profile.plugin_args.emplace(name, std::move(args));
    }
  }
  return profile;
}

absl::Status ParseClientConnection(const YAML::Node& node, SchedulerConfig& config) {
  constexpr std::string_view path = "clientConnection";
  RETURN_IF_ERROR(ExpectMap(node, path));
  RETURN_IF_ERROR(CheckFields(node, path, {"kubeconfig", "qps", "burst", "contentType", "acceptContentTypes"}));
  ClientConnectionConfig& cc = config.client_connection;
  if (const YAML::Node v = node["kubeconfig"]; v && !v.IsNull()) {
    ASSIGN_OR_RETURN(std::string file, ReadString(v, Child(path, "kubeconfig")));
    if (!file.empty()) cc.kubeconfig = std::move(file);  // "" means "the default", as in kube-scheduler
  }
  if (const YAML::Node v = node["qps"]; v && !v.IsNull()) {
    double qps = 0;
    if (!v.IsScalar() || !YAML::convert<double>::decode(v, qps) || !std::isfinite(qps) || qps <= 0) {
      return FieldError(Child(path, "qps"), StrCat("must be a number > 0, got ", Shown(v)));
    }
    cc.qps = qps;
  }
  if (const YAML::Node v = node["burst"]; v && !v.IsNull()) {
    ASSIGN_OR_RETURN(cc.burst, ReadInt(v, Child(path, "burst"), 1, int64_t{1} << 31));
  }
  if (const YAML::Node v = node["contentType"]; v && !v.IsNull()) {
    ASSIGN_OR_RETURN(std::string type, ReadString(v, Child(path, "contentType")));
    if (type != kJson && type != kProtobuf) {
      return FieldError(Child(path, "contentType"),
                        StrCat("unknown \"", type, "\" (want ", kJson, " or ", kProtobuf, ")"));
    }
    if (type != kJson) {
      config.notes.push_back(StrCat("clientConnection.contentType: ", type,
                                    " is read but not applied: Tessel sends JSON"));
    }
    cc.content_type = std::move(type);
  }
  if (const YAML::Node v = node["acceptContentTypes"]; v && !v.IsNull()) {
    ASSIGN_OR_RETURN(std::string types, ReadString(v, Child(path, "acceptContentTypes")));
    if (!types.empty() && types != kJson) {
      config.notes.push_back(StrCat("clientConnection.acceptContentTypes: ", types,
                                    " is read but not applied: Tessel accepts JSON"));
    }
    cc.accept_content_types = std::move(types);
  }
  return absl::OkStatus();
}

absl::Status ParseLeaderElection(const YAML::Node& node, SchedulerConfig& config) {
  constexpr std::string_view path = "leaderElection";
  RETURN_IF_ERROR(ExpectMap(node, path));
  RETURN_IF_ERROR(CheckFields(node, path,
                              {"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod",
                               "resourceLock", "resourceName", "resourceNamespace"}));
  LeaderElectionConfig& le = config.leader_election;
  auto present = [&](std::string_view key) {
    const YAML::Node v = node[std::string(key)];
    return v && !v.IsNull();
  };
  if (present("leaderElect")) {
    ASSIGN_OR_RETURN(le.leader_elect, ReadBool(node["leaderElect"], Child(path, "leaderElect")));
  }
  if (present("leaseDuration")) {
    ASSIGN_OR_RETURN(le.lease_duration, ReadDuration(node["leaseDuration"], Child(path, "leaseDuration")));
  }
  if (present("renewDeadline")) {
    ASSIGN_OR_RETURN(le.renew_deadline, ReadDuration(node["renewDeadline"], Child(path, "renewDeadline")));
  }
  if (present("retryPeriod")) {
    ASSIGN_OR_RETURN(le.retry_period, ReadDuration(node["retryPeriod"], Child(path, "retryPeriod")));
  }
  if (le.lease_duration && le.renew_deadline && *le.renew_deadline >= *le.lease_duration) {
    return FieldError(Child(path, "renewDeadline"), "must be shorter than leaseDuration");
  }
  if (le.renew_deadline && le.retry_period && *le.retry_period >= *le.renew_deadline) {
    return FieldError(Child(path, "retryPeriod"), "must be shorter than renewDeadline");
  }
  if (present("resourceLock")) {
    ASSIGN_OR_RETURN(std::string lock, ReadString(node["resourceLock"], Child(path, "resourceLock")));
    if (lock != "leases") {
      return FieldError(Child(path, "resourceLock"),
                        StrCat("\"", lock, "\" is not supported (Tessel locks a coordination.k8s.io "
                               "Lease: want leases)"));
    }
    le.resource_lock = std::move(lock);
  }
  if (present("resourceName")) {
    ASSIGN_OR_RETURN(le.resource_name, ReadNonEmptyString(node["resourceName"], Child(path, "resourceName")));
  }
  if (present("resourceNamespace")) {
    ASSIGN_OR_RETURN(le.resource_namespace,
                     ReadNonEmptyString(node["resourceNamespace"], Child(path, "resourceNamespace")));
  }
  return absl::OkStatus();
}

absl::Status CheckVersion(const YAML::Node& root) {
  if (root["kind"]) {
    ASSIGN_OR_RETURN(std::string kind, ReadString(root["kind"], "kind"));
    if (kind != "TesselSchedulerConfiguration" && kind != "KubeSchedulerConfiguration") {
      return FieldError("kind", StrCat("unknown kind \"", kind,
                                       "\" (want TesselSchedulerConfiguration or KubeSchedulerConfiguration)"));
    }
  }
  if (root["apiVersion"]) {
    ASSIGN_OR_RETURN(std::string version, ReadString(root["apiVersion"], "apiVersion"));
    if (version != kTesselApiVersion &&
        std::find(std::begin(kKubeApiVersions), std::end(kKubeApiVersions), version) ==
            std::end(kKubeApiVersions)) {
      return FieldError("apiVersion", StrCat("unknown \"", version, "\" (want ", kTesselApiVersion,
                                             " or ", StrJoin(kKubeApiVersions, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SchedulerConfig> Parse(const YAML::Node& root) {
  SchedulerConfig config;
  config.raw = root;
  RETURN_IF_ERROR(CheckFields(
      root, "",
      {"apiVersion", "kind", "parallelism", "profiles", "clientConnection", "leaderElection",
       "podInitialBackoffSeconds", "podMaxBackoffSeconds", "percentageOfNodesToScore",
       "extenders", "enableProfiling", "enableContentionProfiling"},
      {{"healthzBindAddress", "use --bind-address and --secure-port (one server for /healthz and /metrics)"},
       {"metricsBindAddress", "use --bind-address and --secure-port (one server for /healthz and /metrics)"},
       {"delayCacheUntilActive", "Tessel's informers always sync before it leads"},
       {"algorithmSource", "use profiles"}}));
  RETURN_IF_ERROR(CheckVersion(root));
  // kube-scheduler fields that Tessel accepts only with the value that asks for nothing.
  if (const YAML::Node v = root["extenders"]; v && !v.IsNull()) {
    if (!v.IsSequence() || v.size() != 0) {
      return FieldError("extenders", "not supported by Tessel; write a plugin (see README, \"How to add a plugin\")");
    }
  }
  for (const char* key : {"enableProfiling", "enableContentionProfiling"}) {
    if (const YAML::Node v = root[key]; v && !v.IsNull()) {
      ASSIGN_OR_RETURN(bool on, ReadBool(v, key));
      if (on) return FieldError(key, "not supported by Tessel (it serves no profiling endpoints); set false or remove it");
    }
  }
  if (const YAML::Node v = root["parallelism"]; v && !v.IsNull()) {
    ASSIGN_OR_RETURN(int64_t p, ReadInt(v, "parallelism", 0, 256));
    config.parallelism = static_cast<int>(p);
  }
  if (const YAML::Node v = root["clientConnection"]; v && !v.IsNull()) {
    RETURN_IF_ERROR(ParseClientConnection(v, config));
  }
  if (const YAML::Node v = root["leaderElection"]; v && !v.IsNull()) {
    RETURN_IF_ERROR(ParseLeaderElection(v, config));
  }
  constexpr int64_t kMaxBackoffSeconds = int64_t{1} << 31;
  if (const YAML::Node v = root["podInitialBackoffSeconds"]; v && !v.IsNull()) {
    ASSIGN_OR_RETURN(int64_t s, ReadInt(v, "podInitialBackoffSeconds", 1, kMaxBackoffSeconds));
    config.pod_initial_backoff = absl::Seconds(s);
  }
  if (const YAML::Node v = root["podMaxBackoffSeconds"]; v && !v.IsNull()) {
    ASSIGN_OR_RETURN(int64_t s, ReadInt(v, "podMaxBackoffSeconds", 1, kMaxBackoffSeconds));
    config.pod_max_backoff = absl::Seconds(s);
  }
  if (config.pod_max_backoff < config.pod_initial_backoff) {
    return FieldError("podMaxBackoffSeconds",
                      StrCat("must be at least podInitialBackoffSeconds (",
                             absl::ToInt64Seconds(config.pod_initial_backoff), ")"));
  }
  if (const YAML::Node v = root["percentageOfNodesToScore"]; v && !v.IsNull()) {
    ASSIGN_OR_RETURN(config.percentage_of_nodes_to_score, ReadInt(v, "percentageOfNodesToScore", 0, 100));
    NoteNodesToScore(*config.percentage_of_nodes_to_score, "percentageOfNodesToScore", config.notes);
  }
  if (const YAML::Node profiles = root["profiles"]; profiles && !profiles.IsNull()) {
    if (!profiles.IsSequence()) return FieldError("profiles", "expected a list");
    for (size_t i = 0; i < profiles.size(); ++i) {
      ASSIGN_OR_RETURN(ProfileConfig profile,
                       ParseProfile(profiles[i], StrCat("profiles[", i, "]"), config.notes));
      for (const ProfileConfig& other : config.profiles) {
        if (other.scheduler_name == profile.scheduler_name) {
          return FieldError(StrCat("profiles[", i, "].schedulerName"),
                            StrCat("duplicate \"", other.scheduler_name, "\""));
        }
      }
      config.profiles.push_back(std::move(profile));
    }
  }
  return config;
}

// `user` over `defaults`, as kube-scheduler defaults a plugin's typed args: a field the user sets
// wins, a field left out keeps its default, and maps are merged field by field at every depth.
// A list is a value like any other: set, it replaces the default list whole.
YAML::Node MergeArgs(const YAML::Node& defaults, const YAML::Node& user) {
  if (!defaults.IsMap() || !user.IsMap()) return YAML::Clone(user);
  // A key that is not a string is left for the plugin's args reader, which names it.
  for (const auto& field : user) {
    if (!field.first.IsScalar()) return YAML::Clone(user);
  }
  YAML::Node merged = YAML::Clone(defaults);
  for (const auto& field : user) {
    const std::string key = field.first.as<std::string>();
    const YAML::Node base = merged[key];
    merged[key] = base && base.IsMap() && field.second.IsMap() ? MergeArgs(base, field.second)
                                                               : YAML::Clone(field.second);
  }
  return merged;
}

// True if `name` is enabled at some point of a resolved profile.
bool EnabledAnywhere(const ProfileConfig& resolved, std::string_view name) {
  for (const auto& [point, set] : resolved.plugins) {
    for (const PluginRef& ref : set.enabled) {
      if (ref.name == name) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml_text) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    if (!root.IsMap()) return FieldError("(top level)", "expected a map");
    return Parse(root);
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
    auto base = out.plugin_args.find(name);
    YAML::Node merged = base == out.plugin_args.end() ? YAML::Clone(args) : MergeArgs(base->second, args);
    out.plugin_args.erase(name);
    out.plugin_args.emplace(name, std::move(merged));
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
  // The defaults' args of a plugin this profile disabled everywhere go with it (args the user
  // wrote stay, so that args for a plugin no point enables are still reported).
  std::erase_if(out.plugin_args, [&](const auto& entry) {
    return !profile.plugin_args.contains(entry.first) && !EnabledAnywhere(out, entry.first);
  });
  return out;
}

}  // namespace tessel
