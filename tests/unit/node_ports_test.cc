// NodePorts: host port conflicts by (hostIP, protocol, port), as kube-scheduler's HostPortInfo.
#include <catch2/catch.hpp>

#include "plugins/node_ports/node_ports.h"
#include "tests/unit/pod_rules_harness.h"

namespace tessel::node_ports {
namespace node_ports_test {

using testing::FakeHandle;
using testing::LabeledPod;
using testing::NodeBuilder;

Pod WithPorts(std::string name, std::vector<HostPort> ports, std::string node = "") {
  Pod p = LabeledPod(std::move(name), {}, std::move(node));
  p.containers[0].host_ports = std::move(ports);
  return p;
}

TEST_CASE("NodePorts rejects a node where a requested host port is taken", "[plugins][nodeports]") {
  const std::string taken = "Unschedulable: " + std::string(kReason);
  struct Case {
    std::string name;
    std::vector<HostPort> ports;
    std::string on_n1;  // n1 runs a pod binding TCP 8080 (all addresses) and UDP 53 on 10.0.0.1
  };
  const std::vector<Case> cases = {
      {"no host ports: skip", {}, "skip"},
      {"same port and protocol, all addresses", {{.port = 8080}}, taken},
      {"a specific address collides with all addresses", {{.host_ip = "10.0.0.2", .port = 8080}}, taken},
      {"another protocol on the same port", {{.protocol = "UDP", .port = 8080}}, "ok"},
      {"all addresses collide with a specific one", {{.protocol = "UDP", .port = 53}}, taken},
      {"the same specific address", {{.host_ip = "10.0.0.1", .protocol = "UDP", .port = 53}}, taken},
      {"another specific address", {{.host_ip = "10.0.0.2", .protocol = "UDP", .port = 53}}, "ok"},
      {"a free port", {{.port = 9090}}, "ok"},
      {"one taken port among free ones", {{.port = 9090}, {.protocol = "SCTP", .port = 8080}, {.port = 8080}}, taken},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      FakeHandle h;
      h.AddNode(NodeBuilder("n1").Build());
      h.AddNode(NodeBuilder("n2").Build());
      h.AddPod(WithPorts("server", {{.port = 8080}, {.host_ip = "10.0.0.1", .protocol = "UDP", .port = 53}}, "n1"));
      auto plugin = NodePorts::New(h);
      REQUIRE(plugin.ok());
      auto run = testing::RunFilter(**plugin, h, WithPorts("new", c.ports));
      CHECK(run.by_node["n1"] == c.on_n1);
      CHECK(run.by_node["n2"] == (c.ports.empty() ? "skip" : "ok"));
    }
  }
}

TEST_CASE("NodePorts counts init containers' ports too", "[plugins][nodeports]") {
  FakeHandle h;
  h.AddNode(NodeBuilder("n1").Build());
  Pod sidecar = LabeledPod("proxy", {}, "n1");
  Container proxy;
  proxy.name = "proxy";
  proxy.restart_always = true;
  proxy.host_ports.push_back({.port = 15001});
  sidecar.init_containers.push_back(proxy);
  h.AddPod(sidecar);
  auto plugin = NodePorts::New(h);
  REQUIRE(plugin.ok());
  CHECK(testing::RunFilter(**plugin, h, WithPorts("new", {{.port = 15001}})).by_node["n1"] ==
        "Unschedulable: " + std::string(kReason));
}

}  // namespace node_ports_test
}  // namespace tessel::node_ports
