// Kubeconfig and in-cluster configuration. yaml-cpp throws on malformed input and on type
// mismatches, so every use of it sits inside one try block that turns errors into a Status.
#include "scheduler/kube/kubeconfig.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "scheduler/util/file.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"
#include "yaml-cpp/yaml.h"

namespace tessel::kube {

namespace {

std::string Resolve(std::string_view base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return StrCat(base_dir, "/", path);
}

std::string Trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(s.find_last_not_of(ws) + 1);
  s.erase(0, s.find_first_not_of(ws));
  return s;
}

// Finds the entry named `name` in a list such as `clusters:` and returns its inner map
// (`cluster:`, `user:`, `context:`).
YAML::Node FindNamed(const YAML::Node& list, std::string_view name, const char* inner) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const YAML::Node& item : list) {
    if (item.IsMap() && item["name"] && item["name"].as<std::string>() == name) {
      return item[inner];
    }
  }
  return YAML::Node();
}

std::string Str(const YAML::Node& map, const char* key) {
  if (!map || !map.IsMap() || !map[key] || map[key].IsNull()) return "";
  return map[key].as<std::string>();
}

// "-data" fields are base64 PEM; the plain ones are file paths.
absl::StatusOr<std::string> PemField(const YAML::Node& map, const std::string& key,
                                     std::string_view base_dir) {
  const std::string data = Str(map, (key + "-data").c_str());
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(StrCat(key, "-data is not valid base64"));
    }
    return decoded;
  }
  const std::string file = Str(map, key.c_str());
  if (file.empty()) return std::string();
  return ReadFileToString(Resolve(base_dir, file));
}

constexpr std::string_view kExecV1 = "client.authentication.k8s.io/v1";
constexpr std::string_view kExecV1beta1 = "client.authentication.k8s.io/v1beta1";

// users[].user.exec, with the errors kubectl gives, each naming the user and the field.
absl::StatusOr<ExecConfig> ParseExec(const YAML::Node& exec, const std::string& user_name,
                                     const ClientConfig& cluster, std::string_view base_dir) {
  auto bad = [&](std::string_view field, std::string_view why) {
    return absl::InvalidArgumentError(
        StrCat("kubeconfig: user \"", user_name, "\": exec.", field, ": ", why));
  };
  if (!exec.IsMap()) return bad("", "not a map");
  ExecConfig e;
  e.user = user_name;
  e.api_version = Str(exec, "apiVersion");
  if (e.api_version.empty()) return bad("apiVersion", "missing (client.authentication.k8s.io/v1)");
  if (e.api_version != kExecV1 && e.api_version != kExecV1beta1) {
    return bad("apiVersion", StrCat("\"", e.api_version, "\" is not supported (", kExecV1, " or ",
                                    kExecV1beta1, ")"));
  }
  e.command = Str(exec, "command");
  if (e.command.empty()) return bad("command", "missing");
  // As client-go: a relative path with a folder in it is relative to the kubeconfig's folder;
  // a bare name is looked up in PATH.
  if (e.command.find('/') != std::string::npos) e.command = Resolve(base_dir, e.command);
  if (const YAML::Node args = exec["args"]; args && !args.IsNull()) {
    if (!args.IsSequence()) return bad("args", "not a list");
    for (const YAML::Node& a : args) e.args.push_back(a.as<std::string>());
  }
  if (const YAML::Node env = exec["env"]; env && !env.IsNull()) {
    if (!env.IsSequence()) return bad("env", "not a list");
    for (size_t i = 0; i < env.size(); ++i) {
      const std::string name = Str(env[i], "name");
      if (name.empty()) return bad(StrCat("env[", i, "].name"), "missing");
      e.env.emplace_back(name, Str(env[i], "value"));
    }
  }
  e.install_hint = Str(exec, "installHint");
  const std::string mode = Str(exec, "interactiveMode");
  if (mode.empty()) {
    // v1 requires it (client-go refuses the user without it); v1beta1 defaults it.
    if (e.api_version == kExecV1) return bad("interactiveMode", "missing (Never, IfAvailable or Always)");
  } else if (mode != "Never" && mode != "IfAvailable" && mode != "Always") {
    return bad("interactiveMode", StrCat("\"", mode, "\" is not Never, IfAvailable or Always"));
  } else {
    e.interactive_mode = mode;
  }
  if (exec["provideClusterInfo"] && exec["provideClusterInfo"].as<bool>()) {
    nlohmann::json c = {{"server", cluster.server}};
    if (!cluster.ca_pem.empty()) c["certificate-authority-data"] = absl::Base64Escape(cluster.ca_pem);
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    e.cluster_json = c.dump();
  }
  return e;
}

}  // namespace

absl::StatusOr<ClientConfig> ParseKubeconfig(std::string_view text, std::string_view base_dir,
                                             std::string_view context) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) return absl::InvalidArgumentError("kubeconfig: not a YAML map");
    std::string ctx_name(context);
    if (ctx_name.empty()) ctx_name = Str(root, "current-context");
    if (ctx_name.empty()) {
      return absl::InvalidArgumentError("kubeconfig: no current-context and none given");
    }
    YAML::Node ctx = FindNamed(root["contexts"], ctx_name, "context");
    if (!ctx || !ctx.IsMap()) {
      return absl::NotFoundError(StrCat("kubeconfig: context \"", ctx_name, "\" not found"));
    }
    const std::string cluster_name = Str(ctx, "cluster");
    const std::string user_name = Str(ctx, "user");
    YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
    if (!cluster || !cluster.IsMap()) {
      return absl::NotFoundError(StrCat("kubeconfig: cluster \"", cluster_name, "\" not found"));
    }
    ClientConfig config;
    config.server = Str(cluster, "server");
    while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
    if (config.server.empty()) {
      return absl::InvalidArgumentError(
          StrCat("kubeconfig: cluster \"", cluster_name, "\" has no server"));
    }
    config.insecure_skip_tls_verify =
        cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>();
    auto ca = PemField(cluster, "certificate-authority", base_dir);
    if (!ca.ok()) return absl::InvalidArgumentError(StrCat("kubeconfig: ", ca.status().message()));
    config.ca_pem = *std::move(ca);

    if (!user_name.empty()) {
      YAML::Node user = FindNamed(root["users"], user_name, "user");
      if (!user) {
        return absl::NotFoundError(StrCat("kubeconfig: user \"", user_name, "\" not found"));
      }
      if (user.IsMap()) {
        auto cert = PemField(user, "client-certificate", base_dir);
        auto key = PemField(user, "client-key", base_dir);
        if (!cert.ok()) return absl::InvalidArgumentError(StrCat("kubeconfig: ", cert.status().message()));
        if (!key.ok()) return absl::InvalidArgumentError(StrCat("kubeconfig: ", key.status().message()));
        config.client_cert_pem = *std::move(cert);
        config.client_key_pem = *std::move(key);
        if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
          return absl::InvalidArgumentError(
              StrCat("kubeconfig: user \"", user_name, "\" needs both a client certificate and key"));
        }
        config.token = Str(user, "token");
        const std::string token_file = Str(user, "tokenFile");
        if (!token_file.empty()) config.token_file = Resolve(base_dir, token_file);
        if (const YAML::Node provider = user["auth-provider"]; provider && !provider.IsNull()) {
          return absl::UnimplementedError(StrCat(
              "kubeconfig: user \"", user_name, "\": auth-provider \"", Str(provider, "name"),
              "\" was removed from Kubernetes clients; use its exec credential plugin instead "
              "(gke-gcloud-auth-plugin, kubelogin, or `aws eks get-token`), as kubectl does"));
        }
        if (const YAML::Node exec = user["exec"]; exec && !exec.IsNull()) {
          ASSIGN_OR_RETURN(config.exec, ParseExec(exec, user_name, config, base_dir));
        }
      }
    }
    return config;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(StrCat("kubeconfig: ", e.what()));
  }
}

absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  std::string dir = ".";
  if (size_t slash = path.rfind('/'); slash != std::string::npos) {
    dir = slash == 0 ? "/" : path.substr(0, slash);
  }
  auto config = ParseKubeconfig(*text, dir, context);
  if (!config.ok()) {
    return absl::Status(config.status().code(), StrCat(path, ": ", config.status().message()));
  }
  return config;
}

absl::StatusOr<ClientConfig> InClusterConfig(const InClusterPaths& paths) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return absl::FailedPreconditionError(
        "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); pass --kubeconfig");
  }
  ClientConfig config;
  const std::string h(host);
  // IPv6 literals need brackets in a URL.
  config.server = h.find(':') != std::string::npos ? StrCat("https://[", h, "]:", port)
                                                   : StrCat("https://", h, ":", port);
  auto token = ReadFileToString(paths.token_file);
  if (!token.ok()) return token.status();
  config.token_file = paths.token_file;
  auto ca = ReadFileToString(paths.ca_file);
  if (!ca.ok()) return ca.status();
  config.ca_pem = *std::move(ca);
  return config;
}

TokenSource::TokenSource(std::string token, std::string token_file, absl::Duration recheck)
    : token_file_(std::move(token_file)), recheck_(recheck), token_(Trim(std::move(token))) {}

std::string TokenSource::Token() {
  absl::MutexLock lock(&mu_);
  if (token_file_.empty()) return token_;
  const absl::Time now = absl::Now();
  if (now < next_check_) return token_;
  next_check_ = now + recheck_;
  struct stat st;
  if (stat(token_file_.c_str(), &st) != 0) return token_;
  if (st.st_mtim.tv_sec == mtime_.tv_sec && st.st_mtim.tv_nsec == mtime_.tv_nsec &&
      st.st_size == size_) {
    return token_;
  }
  auto text = ReadFileToString(token_file_);
  if (!text.ok()) return token_;
  std::string fresh = Trim(*std::move(text));
  if (fresh.empty()) return token_;  // caught mid-rewrite: keep the last good one
  token_ = std::move(fresh);
  mtime_ = st.st_mtim;
  size_ = st.st_size;
  return token_;
}

}  // namespace tessel::kube
