// Running exec credential plugins and reading their ExecCredential (see exec_credential.h).
#include "scheduler/kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"

extern char** environ;

namespace tessel::kube {

namespace {

using nlohmann::json;

constexpr size_t kMaxOutput = 1 << 20;  // an ExecCredential is a few KiB
constexpr size_t kStderrTail = 2048;    // what an error quotes of the plugin's stderr

std::string Who(const ExecConfig& exec) {
  return StrCat("kubeconfig user \"", exec.user, "\": exec plugin \"", exec.command, "\"");
}

std::string Field(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

}  // namespace

absl::StatusOr<ExecCredential> ParseExecCredential(std::string_view output, const ExecConfig& exec) {
  auto bad = [&](std::string_view why) {
    return absl::UnauthenticatedError(StrCat(Who(exec), ": ExecCredential ", why));
  };
  const json j = json::parse(output, nullptr, false);
  if (!j.is_object()) return bad("is not a JSON object (the plugin printed something else)");
  if (Field(j, "kind") != "ExecCredential") {
    return bad(StrCat("kind: \"", Field(j, "kind"), "\" is not ExecCredential"));
  }
  if (Field(j, "apiVersion") != exec.api_version) {
    return bad(StrCat("apiVersion: \"", Field(j, "apiVersion"), "\" is not ", exec.api_version,
                      ", which the kubeconfig asked for"));
  }
  if (!j.contains("status") || !j["status"].is_object()) return bad("status: missing");
  const json& status = j["status"];
  ExecCredential cred;
  cred.token = Field(status, "token");
  cred.client_cert_pem = Field(status, "clientCertificateData");
  cred.client_key_pem = Field(status, "clientKeyData");
  if (cred.client_cert_pem.empty() != cred.client_key_pem.empty()) {
    return bad(cred.client_cert_pem.empty() ? "status.clientCertificateData: missing (clientKeyData is set)"
                                            : "status.clientKeyData: missing (clientCertificateData is set)");
  }
  if (cred.token.empty() && cred.client_cert_pem.empty()) {
    return bad("status: neither token nor clientCertificateData and clientKeyData are set");
  }
  if (status.contains("expirationTimestamp") && !status["expirationTimestamp"].is_null()) {
    const std::string text = Field(status, "expirationTimestamp");
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) {
      return bad(StrCat("status.expirationTimestamp: \"", text, "\" is not an RFC 3339 time"));
    }
    cred.expiry = t;
  }
  return cred;
}

std::string ExecInfo(const ExecConfig& exec, bool interactive) {
  json spec = {{"interactive", interactive}};
  if (!exec.cluster_json.empty()) spec["cluster"] = json::parse(exec.cluster_json, nullptr, false);
  return json{{"apiVersion", exec.api_version}, {"kind", "ExecCredential"}, {"spec", spec}}.dump();
}

ExecCredentialSource::ExecCredentialSource(ExecConfig exec, const Clock* clock)
    : exec_(std::move(exec)), clock_(clock) {}

absl::StatusOr<ExecCredential> ExecCredentialSource::Get() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_ != nullptr ? clock_->Now() : absl::Now();
  if (cached_.has_value() && (!cached_->expiry.has_value() || now < *cached_->expiry)) return *cached_;
  cached_.reset();
  const bool tty = isatty(STDIN_FILENO) == 1;
  if (exec_.interactive_mode == "Always" && !tty) {
    return absl::UnauthenticatedError(
        StrCat(Who(exec_), ": interactiveMode is Always but standard input is not a terminal"));
  }
  ++runs_;
  ASSIGN_OR_RETURN(std::string output, Run(tty && exec_.interactive_mode != "Never"));
  ASSIGN_OR_RETURN(ExecCredential cred, ParseExecCredential(output, exec_));
  cached_ = cred;
  return cred;
}

void ExecCredentialSource::Invalidate() {
  absl::MutexLock lock(&mu_);
  cached_.reset();
}

int64_t ExecCredentialSource::runs() const {
  absl::MutexLock lock(&mu_);
  return runs_;
}

absl::StatusOr<std::string> ExecCredentialSource::Run(bool interactive) const {
  // The environment: this process's, the kubeconfig's env (which wins), and the exec info.
  std::vector<std::string> env_strings;
  auto overridden = [&](std::string_view entry) {
    const std::string_view name = entry.substr(0, entry.find('='));
    if (name == "KUBERNETES_EXEC_INFO") return true;
    for (const auto& [k, v] : exec_.env) {
      if (k == name) return true;
    }
    return false;
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!overridden(*e)) env_strings.emplace_back(*e);
  }
  for (const auto& [k, v] : exec_.env) env_strings.push_back(StrCat(k, "=", v));
  env_strings.push_back(StrCat("KUBERNETES_EXEC_INFO=", ExecInfo(exec_, interactive)));
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = {exec_.command};
  argv_strings.insert(argv_strings.end(), exec_.args.begin(), exec_.args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return absl::InternalError(StrCat(Who(exec_), ": pipe: ", strerror(errno)));
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return absl::InternalError(StrCat(Who(exec_), ": pipe: ", strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!interactive) posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  // A plugin that may talk to the user (a login prompt) keeps the terminal's stderr.
  if (!interactive) posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, exec_.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    return absl::UnauthenticatedError(StrCat(Who(exec_), ": cannot run it: ", strerror(rc),
                                             exec_.install_hint.empty() ? "" : "\n",
                                             exec_.install_hint));
  }
  // Both pipes are read together, so a plugin that writes much to stderr never blocks.
  std::string stdout_text, stderr_text;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  if (interactive) {
    close(fds[1].fd);
    fds[1].fd = -1;
    open_fds = 1;
  }
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& into = i == 0 ? stdout_text : stderr_text;
      if (into.size() < kMaxOutput) into.append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (stderr_text.size() > kStderrTail) stderr_text = stderr_text.substr(stderr_text.size() - kStderrTail);
    while (!stderr_text.empty() && (stderr_text.back() == '\n' || stderr_text.back() == '\r')) stderr_text.pop_back();
    return absl::UnauthenticatedError(
        StrCat(Who(exec_), ": ",
               WIFEXITED(status) ? StrCat("exited with status ", WEXITSTATUS(status))
                                 : StrCat("killed by signal ", WTERMSIG(status)),
               stderr_text.empty() ? "" : ": ", stderr_text));
  }
  return stdout_text;
}

}  // namespace tessel::kube
