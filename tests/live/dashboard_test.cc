// The Grafana dashboard (manifests/monitoring/dashboard.json) queries only metrics the scheduler
// exports: every tessel_* and scheduler_* name in its queries and variables must be a series
// that SchedulerMetrics registers (taken from the registry itself, histograms with their
// _bucket/_sum/_count series), and every panel has a query.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "nlohmann/json.hpp"
#include "default_scheduler.h"
#include "scheduler/server/metrics.h"

namespace tessel::server {
namespace dashboard_test {

using nlohmann::json;

// Every PromQL string of the dashboard: targets' expr and template variables' query.
void CollectQueries(const json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if ((key == "expr" || key == "query") && value.is_string()) out.push_back(value.get<std::string>());
      CollectQueries(value, out);
    }
  } else if (node.is_array()) {
    for (const json& item : node) CollectQueries(item, out);
  }
}

// The metric names a query uses: Tessel's own and kube-scheduler's.
std::set<std::string> MetricNames(const std::string& query) {
  static const std::regex kName(R"(\b(?:tessel|scheduler)_[A-Za-z0-9_:]+)");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(query.begin(), query.end(), kName); it != std::sregex_iterator(); ++it) {
    out.insert(it->str());
  }
  return out;
}

std::set<std::string> ExportedSeries() {
  ManualClock clock;
  DefaultScheduler d(&clock);
  MetricsRegistry r;
  SchedulerMetrics m(&r, d.s.get());
  const std::vector<std::string> names = r.SeriesNames();
  return {names.begin(), names.end()};
}

TEST_CASE("the metric names of a query are found, PromQL and labels aside") {
  CHECK(MetricNames(R"(histogram_quantile(0.9, sum by (queue, le) (rate(tessel_pod_scheduling_duration_seconds_bucket{queue=~"$queue"}[5m]))))") ==
        std::set<std::string>{"tessel_pod_scheduling_duration_seconds_bucket"});
  CHECK(MetricNames("max(tessel_gpu_allocated) / max(tessel_gpu_allocatable)") ==
        std::set<std::string>{"tessel_gpu_allocatable", "tessel_gpu_allocated"});
  CHECK(MetricNames("sum by (plugin) (scheduler_unschedulable_pods)") ==
        std::set<std::string>{"scheduler_unschedulable_pods"});
}

TEST_CASE("the Grafana dashboard references only metrics the scheduler exports") {
  std::ifstream in(TESSEL_DASHBOARD);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const json dashboard = json::parse(text.str(), nullptr, false);
  REQUIRE(dashboard.is_object());
  REQUIRE(dashboard.contains("panels"));
  for (const json& panel : dashboard["panels"]) {
    INFO("panel " << panel.value("title", "?"));
    std::vector<std::string> queries;
    CollectQueries(panel, queries);
    CHECK_FALSE(queries.empty());
  }
  std::vector<std::string> queries;
  CollectQueries(dashboard, queries);
  const std::set<std::string> exported = ExportedSeries();
  std::set<std::string> used;
  for (const std::string& q : queries) {
    for (const std::string& name : MetricNames(q)) {
      INFO("query: " << q);
      CHECK(exported.contains(name));
      used.insert(name);
    }
  }
  // The panels the reference architecture watches: per-queue pending and admitted, quota usage
  // and borrowing, GPU allocation and fragmentation, evictions.
  for (const char* want : {"tessel_queue_pending_pods", "tessel_queue_admitted_pods", "tessel_queue_usage",
                           "tessel_queue_borrowed", "tessel_gpu_allocated", "tessel_gpu_fragmentation",
                           "tessel_queue_evictions_total"}) {
    CHECK(used.contains(want));
  }
}

}  // namespace dashboard_test
}  // namespace tessel::server
