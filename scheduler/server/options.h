// tessel-scheduler's command-line options: the flags it declares (names, defaults and help,
// kube-scheduler's where they share one), and how the configuration file fills what no flag
// gave (a flag on the command line wins, as in kube-scheduler).
//
//   SchedulerOptions options;
//   options.ParseOrExit(argc, argv);             // --help, --version, bad flags: exits
//   ASSIGN_OR_RETURN(SchedulerConfig config, options.LoadConfig());  // and ApplyConfig
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/cmd/flags.h"
#include "scheduler/framework/config.h"

namespace tessel::server {

class SchedulerOptions {
 public:
  SchedulerOptions();
  SchedulerOptions(const SchedulerOptions&) = delete;  // the flags point into it
  SchedulerOptions& operator=(const SchedulerOptions&) = delete;

  // Parses the command line (without the program name), or exits as cmd::ParseOrExit does;
  // --version prints the version and exits 0.
  void ParseOrExit(int argc, char** argv);
  // The configuration file's leaderElection and clientConnection settings where no flag gave
  // them, the kubeconfig's fallbacks ($KUBECONFIG), and the checks across them.
  absl::Status ApplyConfig(const SchedulerConfig& config);
  // The configuration of --config (the defaults without it), applied as ApplyConfig does.
  absl::StatusOr<SchedulerConfig> LoadConfig();

  std::string kubeconfig;  // after ApplyConfig: empty means the in-cluster config
  std::string context;
  std::string config;
  bool print_defaults = false;
  bool version = false;
  bool leader_elect = true;
  std::string lock_namespace = "kube-system";
  std::string lock_name = "tessel-scheduler";
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  std::string bind_address = "0.0.0.0";
  int secure_port = 10259;
  int port = 0;
  std::string tls_cert_file, tls_key_file, cert_dir;
  std::optional<double> qps;     // after ApplyConfig: set (flag, else clientConnection.qps, else 50)
  std::optional<int64_t> burst;  // after ApplyConfig: set (flag, else clientConnection.burst, else 100)
  int bind_workers = 32;
  absl::Duration queue_status_interval = absl::Seconds(10);
  int64_t max_open_provisioning_requests = 100;  // 0: no limit
  absl::Duration provisioning_retry_delay = absl::Minutes(10);
  int admin_port = 10260;
  bool admin_insecure = false;
  int probe_port = 0;
  int64_t simulate_max_bytes = 16 << 20;
  int64_t simulate_memory_mib = 768;
  absl::Duration simulate_timeout = absl::Seconds(60);
  int admin_api_port = 10262;
  std::string admin_api_service = "kube-system/tessel-admin-api";
  std::string admin_api_advertise_address;  // empty: $POD_IP
  int verbosity = 2;

 private:
  cmd::FlagSet flags_;
};

}  // namespace tessel::server
