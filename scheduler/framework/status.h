// The result of running a plugin at an extension point, with kube-scheduler's codes:
//   Success                       the pod may proceed
//   Unschedulable                 not here, now; preemption might help
//   UnschedulableAndUnresolvable  not here, and preemption cannot help (e.g. node affinity)
//   Wait                          Permit: hold the pod until allowed, rejected or timed out
//   Skip                          PreFilter/PreScore: this plugin has nothing to do for the pod
//   Error                         something broke; the pod is retried with backoff
// Reasons are the short, human texts that kube-scheduler aggregates into
// "0/5 nodes are available: 2 Insufficient nvidia.com/gpu, ...".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessel {

enum class Code { kSuccess, kError, kUnschedulable, kUnschedulableAndUnresolvable, kWait, kSkip };

std::string_view CodeName(Code code);

class Status {
 public:
  Status() = default;  // Success
  Status(Code code, std::vector<std::string> reasons) : code_(code), reasons_(std::move(reasons)) {}
  Status(Code code, std::string reason) : code_(code), reasons_{std::move(reason)} {}

  static Status Ok() { return Status(); }
  static Status Unschedulable(std::string reason) { return {Code::kUnschedulable, std::move(reason)}; }
  static Status Unresolvable(std::string reason) {
    return {Code::kUnschedulableAndUnresolvable, std::move(reason)};
  }
  static Status Error(std::string reason) { return {Code::kError, std::move(reason)}; }
  static Status Skip() { return {Code::kSkip, std::vector<std::string>{}}; }
  static Status Wait() { return {Code::kWait, std::vector<std::string>{}}; }

  Code code() const { return code_; }
  bool ok() const { return code_ == Code::kSuccess; }
  bool IsSkip() const { return code_ == Code::kSkip; }
  bool IsWait() const { return code_ == Code::kWait; }
  bool IsRejected() const {
    return code_ == Code::kUnschedulable || code_ == Code::kUnschedulableAndUnresolvable;
  }
  const std::vector<std::string>& reasons() const { return reasons_; }

  // The plugin that produced the status (set by the framework).
  const std::string& plugin() const { return plugin_; }
  Status& WithPlugin(std::string_view plugin) {
    plugin_ = std::string(plugin);
    return *this;
  }
  // "Unschedulable: reason; reason"
  std::string Message() const;

 private:
  Code code_ = Code::kSuccess;
  std::vector<std::string> reasons_;
  std::string plugin_;
};

}  // namespace tessel
