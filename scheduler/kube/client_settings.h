// How the live scheduler talks to the API server, as kube-scheduler configures it: the
// `clientConnection` section of a KubeSchedulerConfiguration-shaped --config file, overridden
// by the flags --kube-api-qps, --kube-api-burst and --kubeconfig when they are given.
//
//   clientConnection:
//     kubeconfig: /etc/tessel/kubeconfig   # default: --kubeconfig, $KUBECONFIG, in-cluster
//     qps: 50                              # per client (binding, events+status, leader
//     burst: 100                           #   election, informers each have their own budget)
//     contentType: application/json        # Tessel speaks JSON; protobuf is accepted and
//                                          #   ignored with a warning
//     acceptContentTypes: ""               # accepted, ignored
//
//   ASSIGN_OR_RETURN(ClientConnection cc, ReadClientConnection(config.raw));
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "yaml-cpp/yaml.h"

namespace tessel::kube {

struct ClientConnection {
  double qps = 50;      // kube-scheduler's default
  int64_t burst = 100;  // kube-scheduler's default
  std::string kubeconfig;
  std::string content_type = "application/json";
};

// Reads `clientConnection` from the configuration document (the defaults when absent). An
// unknown field or a value of the wrong type is an error naming the field.
absl::StatusOr<ClientConnection> ReadClientConnection(const YAML::Node& root);

}  // namespace tessel::kube
