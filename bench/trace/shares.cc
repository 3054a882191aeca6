// Shares against entitlements over a run (see shares.h).
#include "bench/trace/shares.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include "bench/report/svg.h"
#include "bench/trace/entitlement.h"
#include "fmt/format.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

// The tree of a run: each queue's and cohort's parent ("" for a root; a parent no object
// defines is a root cohort) and whether it is a queue.
struct RunTree {
  std::map<std::string, std::string> parent;
  std::map<std::string, bool> queue;

  explicit RunTree(const std::vector<QuotaTreeNode>& nodes) {
    for (const QuotaTreeNode& n : nodes) {
      parent[n.name] = n.parent;
      queue[n.name] = n.queue;
    }
    for (const QuotaTreeNode& n : nodes) {
      if (!n.parent.empty() && !parent.contains(n.parent)) {
        parent[n.parent] = "";
        queue[n.parent] = false;
      }
    }
  }
  // The node and its ancestors, nearest first (a cycle is cut at the tree's size).
  std::vector<std::string> PathUp(const std::string& name) const { return bench::PathUp(parent, name); }
};

// More than 10 % of the entitlement away from it, either way; more than 10 % below it.
bool Off(const ShareSample& s) { return std::abs(s.usage_milli - s.entitlement_milli) * 10 > s.entitlement_milli; }
bool Below(const ShareSample& s) { return s.usage_milli * 10 < s.entitlement_milli * 9; }
// One of its waiting jobs would run within its entitlement: owed whatever the jobs' sizes.
bool WaitingJobFits(const ShareSample& s) {
  return s.smallest_waiting_milli > 0 && s.usage_milli + s.smallest_waiting_milli <= s.entitlement_milli;
}

// The longest stretch of samples with demand for which `pred` holds: from the first such sample
// to the first after it that has no demand or fails `pred` (or the last sample).
class Stretch {
 public:
  void Add(int64_t at, bool holds) {
    if (holds && start_ < 0) start_ = at;
    if (!holds && start_ >= 0) Close(at);
  }
  int64_t Longest(int64_t last_at) {
    if (start_ >= 0) Close(last_at);
    return longest_;
  }

 private:
  void Close(int64_t at) {
    longest_ = std::max(longest_, at - start_);
    start_ = -1;
  }
  int64_t start_ = -1;  // -1: not in a stretch (sample times are never negative)
  int64_t longest_ = 0;
};

std::string FileSafe(std::string_view s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return out;
}

}  // namespace

std::vector<ShareStats> ShareStatsOf(const TimelineResult& run) {
  const RunTree tree(run.quota_tree);
  std::map<std::string, ShareStats> by_name;
  for (const auto& [name, parent] : tree.parent) {
    ShareStats& s = by_name[name];
    s.name = name;
    s.queue = tree.queue.at(name);
    s.depth = static_cast<int32_t>(tree.PathUp(name).size()) - 1;
    s.step_s = run.samples.size() >= 2 ? run.samples[1].at - run.samples[0].at : 0;
  }
  for (const JobOutcome& j : run.jobs) {
    if (!tree.parent.contains(j.queue)) continue;
    for (const std::string& n : tree.PathUp(j.queue)) {
      ShareStats& s = by_name[n];
      s.evictions += j.pods_evicted;
      const int64_t since = j.arrive - run.first_arrival;
      s.first_demand_s = s.first_demand_s < 0 ? since : std::min(s.first_demand_s, since);
    }
  }
  const ShareSample none;
  for (auto& [name, s] : by_name) {
    __int128 dev = 0, entitled = 0, used = 0;
    Stretch off, below, owed, room;
    for (size_t i = 0; i < run.samples.size(); ++i) {
      const Sample& smp = run.samples[i];
      const int64_t dt = i + 1 < run.samples.size() ? run.samples[i + 1].at - smp.at : 0;
      auto it = smp.shares.find(name);
      const ShareSample& x = it == smp.shares.end() ? none : it->second;
      const bool demand = x.demand_milli > 0;
      off.Add(smp.at, demand && Off(x));
      below.Add(smp.at, demand && Below(x));
      owed.Add(smp.at, demand && WaitingJobFits(x));
      room.Add(smp.at, demand && x.room_owed);
      if (!demand) continue;
      s.demand_s += dt;
      dev += static_cast<__int128>(std::abs(x.usage_milli - x.entitlement_milli)) * dt;
      entitled += static_cast<__int128>(x.entitlement_milli) * dt;
      used += static_cast<__int128>(x.usage_milli) * dt;
      const int64_t since = smp.at - run.first_arrival;
      if (s.time_to_share_s < 0 && s.first_demand_s >= 0 && since >= s.first_demand_s && !Below(x)) {
        s.time_to_share_s = since - s.first_demand_s;
      }
    }
    const int64_t last_at = run.samples.empty() ? 0 : run.samples.back().at;
    s.longest_off_s = off.Longest(last_at);
    s.longest_below_s = below.Longest(last_at);
    s.longest_owed_s = owed.Longest(last_at);
    s.longest_room_owed_s = room.Longest(last_at);
    if (s.demand_s > 0) {
      s.mean_abs_dev_milli = static_cast<int64_t>(dev / s.demand_s);
      s.mean_usage_milli = static_cast<int64_t>(used / s.demand_s);
      s.mean_entitlement_milli = static_cast<int64_t>(entitled / s.demand_s);
    }
    if (entitled > 0) s.mean_abs_dev_per_mille = static_cast<int64_t>(dev * 1000 / entitled);
  }
  std::vector<ShareStats> out;
  for (bool queues : {true, false}) {
    for (const auto& [name, s] : by_name) {
      if (s.queue == queues) out.push_back(s);
    }
  }
  return out;
}

nlohmann::json SummarizeShares(const PolicyRuns& runs) {
  nlohmann::json out = nlohmann::json::object();
  std::map<std::string, std::vector<ShareStats>> by_name;
  std::vector<std::string> order;
  for (const TimelineResult& r : runs.runs) {
    for (ShareStats& s : ShareStatsOf(r)) {
      if (!by_name.contains(s.name)) order.push_back(s.name);
      by_name[s.name].push_back(std::move(s));
    }
  }
  for (const std::string& name : order) {
    const std::vector<ShareStats>& v = by_name[name];
    double dev = 0, pct = 0, gpus = 0, entitled = 0;
    int64_t off = 0, below = 0, owed = 0, room = 0, first = -1, to_share = 0, evictions = 0, step = 0;
    for (const ShareStats& s : v) {
      dev += s.mean_abs_dev_milli / 1000.0 / static_cast<double>(v.size());
      pct += s.mean_abs_dev_per_mille / 10.0 / static_cast<double>(v.size());
      gpus += s.mean_usage_milli / 1000.0 / static_cast<double>(v.size());
      entitled += s.mean_entitlement_milli / 1000.0 / static_cast<double>(v.size());
      off = std::max(off, s.longest_off_s);
      below = std::max(below, s.longest_below_s);
      owed = std::max(owed, s.longest_owed_s);
      room = std::max(room, s.longest_room_owed_s);
      first = std::max(first, s.first_demand_s);
      to_share = (to_share < 0 || s.time_to_share_s < 0) ? -1 : std::max(to_share, s.time_to_share_s);
      evictions += s.evictions;
      step = std::max(step, s.step_s);
    }
    out[name] = {{"kind", v.front().queue ? "queue" : "cohort"},
                 {"depth", v.front().depth},
                 {"step_s", step},
                 {"mean_abs_dev_gpus", dev},
                 {"mean_abs_dev_pct", pct},
                 {"mean_gpus", gpus},
                 {"mean_entitled_gpus", entitled},
                 {"longest_off_10pct_s", off},
                 {"longest_below_10pct_s", below},
                 {"longest_waiting_job_fits_s", owed},
                 {"longest_room_owed_s", room},
                 {"first_demand_s", first},
                 {"time_to_share_s", first < 0 ? -1 : to_share},
                 {"evictions", evictions}};
  }
  return out;
}

std::string SharesCsv(const std::vector<PolicyRuns>& all) {
  std::string out = "policy,seed,at,name,kind,usage_milli,demand_milli,entitlement_milli,smallest_waiting_milli,room_owed\n";
  for (const PolicyRuns& pr : all) {
    for (size_t k = 0; k < pr.runs.size(); ++k) {
      const RunTree tree(pr.runs[k].quota_tree);
      for (const Sample& s : pr.runs[k].samples) {
        for (const auto& [name, x] : s.shares) {
          auto queue = tree.queue.find(name);
          const bool is_queue = queue != tree.queue.end() && queue->second;
          StrAppend(&out, fmt::format("{},{},{},{},{},{},{},{},{},{}\n", pr.policy, pr.seeds[k], s.at, name,
                                      is_queue ? "queue" : "cohort", x.usage_milli, x.demand_milli,
                                      x.entitlement_milli, x.smallest_waiting_milli, x.room_owed ? 1 : 0));
        }
      }
    }
  }
  return out;
}

std::vector<TracePlot> SharePlots(const std::vector<PolicyRuns>& all) {
  std::vector<TracePlot> plots;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const PolicyRuns& pr : all) {
    if (pr.runs.empty() || pr.runs[0].quota_tree.empty() || pr.runs[0].samples.empty()) continue;
    const TimelineResult& r = pr.runs[0];
    const int64_t span = r.samples.back().at - r.first_arrival;
    const bool in_minutes = span < 2 * 3600;
    const double unit = in_minutes ? 60.0 : 3600.0;
    const std::string x_label = in_minutes ? "minutes since the first arrival" : "hours since the first arrival";
    // The levels: the queues (-1), then the cohorts by depth.
    std::map<int32_t, std::vector<const ShareStats*>> levels;
    const std::vector<ShareStats> stats = ShareStatsOf(r);
    for (const ShareStats& s : stats) levels[s.queue ? -1 : s.depth].push_back(&s);
    for (const auto& [level, members] : levels) {
      std::vector<PlotLine> lines;
      double most = 1;
      for (size_t i = 0; i < members.size(); ++i) {
        const std::string& name = members[i]->name;
        PlotLine held{name, PlotColor(i), false, {}};
        PlotLine entitled{StrCat(name, " entitled"), PlotColor(i), true, {}};
        for (const Sample& s : r.samples) {
          auto it = s.shares.find(name);
          const ShareSample x = it == s.shares.end() ? ShareSample{} : it->second;
          const double at = static_cast<double>(s.at - r.first_arrival) / unit;
          held.points.push_back({at, x.usage_milli / 1000.0});
          entitled.points.push_back({at, x.demand_milli > 0 ? x.entitlement_milli / 1000.0 : nan});
          most = std::max({most, x.usage_milli / 1000.0, x.demand_milli > 0 ? x.entitlement_milli / 1000.0 : 0.0});
        }
        lines.push_back(std::move(held));
        lines.push_back(std::move(entitled));
      }
      const std::string what = level < 0 ? "queues" : fmt::format("cohorts at depth {}", level);
      plots.push_back({StrCat("shares-", level < 0 ? std::string("queues") : fmt::format("cohorts-{}", level), "-",
                              FileSafe(pr.policy)),
                       StrCat("GPUs held against entitlement: ", what, ", ", pr.policy),
                       LinePlot({.title = StrCat("GPUs held (solid) and entitled while in demand (dashed): ", what,
                                                 ", ", pr.policy, " (first seed)"),
                                 .x_label = x_label, .x_max = std::max(1.0, static_cast<double>(span) / unit),
                                 .y_label = "GPUs", .y_max = std::ceil(most * 1.05)},
                                lines)});
    }
  }
  return plots;
}

}  // namespace tessel::bench
