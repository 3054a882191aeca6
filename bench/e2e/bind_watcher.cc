// The bench's binds seen through an informer (see bind_watcher.h).
#include "bench/e2e/bind_watcher.h"

#include <charconv>
#include <thread>

#include "fmt/format.h"
#include "bench/e2e/live_cluster.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {

namespace {

using json = nlohmann::json;
constexpr std::string_view kPodPrefix = "e2e-pod-";
// How long the first list may take before the bench gives up.
constexpr auto kSyncTimeout = std::chrono::minutes(5);

// Only what the watcher reads (and the informer's identity: name, namespace, UID, version).
void KeepNameAndNode(json& pod) {
  pod.erase("status");
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    json node = spec->value("nodeName", json());
    *spec = json::object();
    if (!node.is_null()) (*spec)["nodeName"] = std::move(node);
  }
}

}  // namespace

std::string PodName(int64_t i) { return fmt::format("e2e-pod-{:05d}", i); }

std::optional<int64_t> PodIndex(std::string_view name) {
  if (name.substr(0, kPodPrefix.size()) != kPodPrefix) return std::nullopt;
  const std::string_view digits = name.substr(kPodPrefix.size());
  int64_t index = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return index;
}

BindWatcher::BindWatcher(kube::KubeClient& client, std::string_view ns)
    : informer_(&client, {.name = "pods", .path = live::PodsPath(ns), .prune = KeepNameAndNode}, this) {
  informer_.Start();
  const auto deadline = Clock::now() + kSyncTimeout;
  while (!informer_.HasSynced()) {
    if (Clock::now() > deadline) live::Die(StrCat("watch pods in ", ns, ": no list after 5 minutes"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

BindWatcher::~BindWatcher() { informer_.Stop(); }

void BindWatcher::Start() {
  absl::MutexLock lock(&mu_);
  start_ = Clock::now();
}

int64_t BindWatcher::bound() {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(node_of_.size());
}

double BindWatcher::last_bind_s() {
  absl::MutexLock lock(&mu_);
  return node_of_.empty() ? 0 : std::chrono::duration<double>(last_bind_ - start_).count();
}

std::map<int64_t, std::string> BindWatcher::bindings() {
  absl::MutexLock lock(&mu_);
  return node_of_;
}

void BindWatcher::Record(const json& pod) {
  const auto now = Clock::now();
  const std::string node = kube::JsonString(pod.value("spec", json::object()), "nodeName");
  if (node.empty()) return;
  const std::optional<int64_t> index = PodIndex(kube::JsonString(pod.value("metadata", json::object()), "name"));
  if (!index) return;
  absl::MutexLock lock(&mu_);
  if (node_of_.emplace(*index, node).second) last_bind_ = now;
}

}  // namespace tessel::bench
