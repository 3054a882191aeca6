// The figures and the report of `tessel-bench trace` (see report.h).
#include "bench/trace/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "bench/report/svg.h"
#include "bench/trace/shares.h"
#include "fmt/format.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {

int64_t Percentile(std::vector<int64_t> values, int p) {
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  size_t rank = (static_cast<size_t>(p) * values.size() + 99) / 100;
  rank = std::clamp<size_t>(rank, 1, values.size());
  return values[rank - 1];
}

namespace {

nlohmann::json Percentiles(const std::vector<int64_t>& v) {
  return {{"count", v.size()}, {"p50", Percentile(v, 50)}, {"p95", Percentile(v, 95)}, {"p99", Percentile(v, 99)}};
}

double GpuHours(int64_t milli_seconds) { return static_cast<double>(milli_seconds) / 1000.0 / 3600.0; }

double Pct(int64_t part, int64_t whole) { return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0; }

// The size classes any policy's summary has, in the order first seen.
std::vector<std::string> SizeClassesIn(const nlohmann::json& summaries) {
  std::vector<std::string> classes;
  for (const nlohmann::json& s : summaries) {
    for (const auto& [k, v] : s["delay_by_class"].items()) {
      if (std::find(classes.begin(), classes.end(), k) == classes.end()) classes.push_back(k);
    }
  }
  return classes;
}

}  // namespace

nlohmann::json Summarize(const PolicyRuns& pr, bool with_moves) {
  std::vector<int64_t> delay, jct, slowdown;
  std::map<std::string, std::vector<int64_t>> by_class, by_queue, by_priority;
  int64_t jobs = 0, started = 0, completed = 0, evictions = 0, interruptions = 0, lost = 0, makespan = 0, moves = 0, lost_to_moves = 0;
  // Allocation and fragmentation are means over the arrival window, while load is offered (over
  // the whole run when every job arrives at once), and allocation over the whole run beside it.
  int64_t alloc_ms = 0, capacity_s = 0, run_alloc_ms = 0, run_capacity_s = 0, frag_sum = 0, frag_cap = 0;
  double wall = 0;
  // The spread across seeds: each run's own time-weighted means.
  std::vector<double> alloc_by_seed, frag_by_seed;
  for (const TimelineResult& r : pr.runs) {
    const int64_t alloc_ms_before = alloc_ms, capacity_s_before = capacity_s, frag_sum_before = frag_sum,
                  frag_cap_before = frag_cap;
    for (const JobOutcome& j : r.jobs) {
      // A steady state reports the jobs that arrive in its window, past the warm-up.
      if (r.steady && (j.arrive < r.window_from || j.arrive >= r.window_to)) continue;
      ++jobs;
      interruptions += j.evictions;
      if (j.start < 0) continue;
      ++started;
      const int64_t d = j.start - j.arrive;
      delay.push_back(d);
      by_class[j.size_class].push_back(d);
      if (!j.queue.empty()) by_queue[j.queue].push_back(d);
      by_priority[std::to_string(j.priority)].push_back(d);
      if (j.end >= 0) {
        ++completed;
        jct.push_back(j.end - j.arrive);
        slowdown.push_back((j.end - j.arrive) * 1000 / std::max<int64_t>(1, j.duration));
      }
    }
    evictions += r.evictions;
    moves += r.moves;
    lost += r.lost_gpu_milli_seconds;
    lost_to_moves += r.lost_to_moves_gpu_milli_seconds;
    makespan = std::max(makespan, r.makespan);
    const bool window = r.window_to > r.window_from;
    run_alloc_ms += r.allocated_milli_seconds;
    run_capacity_s += r.capacity_milli * (r.ended_at - r.first_arrival);
    alloc_ms += window ? r.window_allocated_milli_seconds : r.allocated_milli_seconds;
    capacity_s += r.capacity_milli * (window ? r.window_to - r.window_from : r.ended_at - r.first_arrival);
    // Samples are evenly spaced, so their mean over the window is a time-weighted mean.
    for (const Sample& s : r.samples) {
      if (window && (s.at < r.window_from || s.at > r.window_to)) continue;
      frag_sum += s.frag_milli, frag_cap += r.capacity_milli;
    }
    wall += r.wall_seconds;
    alloc_by_seed.push_back(Pct(alloc_ms - alloc_ms_before, capacity_s - capacity_s_before));
    frag_by_seed.push_back(Pct(frag_sum - frag_sum_before, frag_cap - frag_cap_before));
  }
  auto group = [](const std::map<std::string, std::vector<int64_t>>& m) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : m) out[k] = Percentiles(v);
    return out;
  };
  nlohmann::json summary = {{"policy", pr.policy},
          {"seeds", pr.seeds},
          {"jobs", jobs},
          {"started", started},
          {"completed", completed},
          {"queued_at_end", jobs - started},
          {"delay_s", Percentiles(delay)},
          {"delay_by_class", group(by_class)},
          {"delay_by_queue", group(by_queue)},
          {"delay_by_priority", group(by_priority)},
          {"jct_s", Percentiles(jct)},
          {"slowdown_milli", Percentiles(slowdown)},
          {"alloc_pct", Pct(alloc_ms, capacity_s)},
          {"alloc_pct_run", Pct(run_alloc_ms, run_capacity_s)},
          {"frag_pct", Pct(frag_sum, frag_cap)},
          {"alloc_pct_by_seed", alloc_by_seed},
          {"frag_pct_by_seed", frag_by_seed},
          {"evictions", evictions},
          {"interruptions", interruptions},
          {"lost_gpu_hours", GpuHours(lost)},
          {"makespan_s", makespan},
          {"wall_s", wall}};
  nlohmann::json by_reason = nlohmann::json::object();
  for (const TimelineResult& r : pr.runs) {
    for (const auto& [reason, n] : r.evictions_by_reason) by_reason[reason] = by_reason.value(reason, int64_t{0}) + n;
  }
  summary["evictions_by_reason"] = by_reason;
  const bool has_tree = std::any_of(pr.runs.begin(), pr.runs.end(), [](const TimelineResult& r) { return !r.quota_tree.empty(); });
  if (has_tree) summary["shares"] = SummarizeShares(pr);
  if (with_moves) {
    auto per_100_jobs = [jobs](int64_t n) { return jobs > 0 ? 100.0 * static_cast<double>(n) / static_cast<double>(jobs) : 0; };
    summary["moves"] = moves;
    summary["preemptions"] = evictions - moves;
    summary["moves_per_100_jobs"] = per_100_jobs(moves);
    summary["preemptions_per_100_jobs"] = per_100_jobs(evictions - moves);
    summary["lost_gpu_hours_moves"] = GpuHours(lost_to_moves);
    summary["lost_gpu_hours_preemptions"] = GpuHours(lost - lost_to_moves);
  }
  return summary;
}

std::string JobsCsv(const std::vector<PolicyRuns>& all, bool with_moves) {
  std::string out = "policy,seed,job,class,queue,priority,gpu_milli,arrive,start,end,duration,evictions,lost_gpu_milli_s";
  out += with_moves ? ",moves,lost_to_moves_gpu_milli_s\n" : "\n";
  for (const PolicyRuns& pr : all) {
    for (size_t s = 0; s < pr.runs.size(); ++s) {
      for (const JobOutcome& j : pr.runs[s].jobs) {
        StrAppend(&out, fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}", pr.policy, pr.seeds[s], j.id,
                                    j.size_class, j.queue, j.priority, j.gpu_milli, j.arrive, j.start, j.end,
                                    j.duration, j.evictions, j.lost_gpu_milli_seconds));
        StrAppend(&out, with_moves ? fmt::format(",{},{}\n", j.moves, j.lost_to_moves_gpu_milli_seconds) : "\n");
      }
    }
  }
  return out;
}

std::string CurvesCsv(const std::vector<PolicyRuns>& all) {
  std::string out = "policy,seed,at,allocated_milli,capacity_milli,frag_milli,evictions\n";
  for (const PolicyRuns& pr : all) {
    for (size_t s = 0; s < pr.runs.size(); ++s) {
      for (const Sample& x : pr.runs[s].samples) {
        StrAppend(&out, fmt::format("{},{},{},{},{},{},{}\n", pr.policy, pr.seeds[s], x.at, x.allocated_milli,
                                    pr.runs[s].capacity_milli, x.frag_milli, x.evictions));
      }
    }
  }
  return out;
}

std::vector<TracePlot> TracePlots(const std::vector<PolicyRuns>& all, const nlohmann::json& summaries) {
  std::vector<TracePlot> plots;
  const std::vector<std::string> classes = SizeClassesIn(summaries);
  // Curves of each policy's first seed, from the first arrival: in hours, or in minutes when
  // they span less than two hours (a trace compressed to a high load arrives within minutes).
  int64_t span = 0;
  for (const PolicyRuns& pr : all) {
    if (!pr.runs.empty() && !pr.runs[0].samples.empty()) {
      span = std::max(span, pr.runs[0].samples.back().at - pr.runs[0].first_arrival);
    }
  }
  const bool in_minutes = span < 2 * 3600;
  const double unit = in_minutes ? 60.0 : 3600.0;
  const double x_max = std::max(1.0, static_cast<double>(span) / unit);
  const std::string x_label = in_minutes ? "minutes since the first arrival" : "hours since the first arrival";
  std::vector<PlotLine> alloc, frag, evict;
  int64_t most_evictions = 1;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].runs.empty()) continue;
    const TimelineResult& r = all[i].runs[0];
    PlotLine a{all[i].policy, PlotColor(i), false, {}}, f = a, e = a;
    for (const Sample& s : r.samples) {
      const double x = static_cast<double>(s.at - r.first_arrival) / unit;
      a.points.push_back({x, Pct(s.allocated_milli, r.capacity_milli)});
      f.points.push_back({x, Pct(s.frag_milli, r.capacity_milli)});
      e.points.push_back({x, static_cast<double>(s.evictions)});
      most_evictions = std::max(most_evictions, s.evictions);
    }
    alloc.push_back(std::move(a));
    frag.push_back(std::move(f));
    evict.push_back(std::move(e));
  }
  plots.push_back({"allocation", "GPU allocation over time",
                   LinePlot({.title = "Allocated GPU over time (first seed)", .x_label = x_label, .x_max = x_max,
                             .y_label = "allocated GPU (% of capacity)", .y_max = 100},
                            alloc)});
  plots.push_back({"fragmentation", "Fragmentation over time",
                   LinePlot({.title = "Fragmented GPU over time (FGD's measure, first seed)",
                             .x_label = x_label, .x_max = x_max,
                             .y_label = "fragmented GPU (% of capacity)", .y_max = 30},
                            frag)});
  plots.push_back({"evictions", "Evictions over time",
                   LinePlot({.title = "Evictions so far (first seed)", .x_label = x_label, .x_max = x_max,
                             .y_label = "evictions",
                             .y_max = static_cast<double>(most_evictions)},
                            evict)});
  // Delay CDFs by size class, all seeds pooled.
  for (const std::string& c : classes) {
    std::vector<PlotLine> lines;
    double d_max = 1;
    std::vector<std::vector<int64_t>> per_policy(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      for (const TimelineResult& r : all[i].runs) {
        for (const JobOutcome& j : r.jobs) {
          if (j.size_class == c && j.start >= 0) per_policy[i].push_back(j.start - j.arrive);
        }
      }
      std::sort(per_policy[i].begin(), per_policy[i].end());
      if (!per_policy[i].empty()) d_max = std::max(d_max, static_cast<double>(Percentile(per_policy[i], 99)) / 60.0);
    }
    for (size_t i = 0; i < all.size(); ++i) {
      PlotLine l{all[i].policy, PlotColor(i), false, {}};
      const auto& v = per_policy[i];
      for (size_t k = 0; k < v.size(); k += std::max<size_t>(1, v.size() / 200)) {
        l.points.push_back({v[k] / 60.0, 100.0 * static_cast<double>(k + 1) / static_cast<double>(v.size())});
      }
      if (!v.empty()) l.points.push_back({v.back() / 60.0, 100.0});
      lines.push_back(std::move(l));
    }
    std::string file = "delay-cdf-";
    for (char ch : c) file += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '-';
    plots.push_back({std::move(file), StrCat("Queueing delay CDF: ", c),
                     LinePlot({.title = StrCat("Queueing delay, ", c, " (all seeds; x to the p99)"),
                               .x_label = "minutes from arrival to bind", .x_max = d_max,
                               .y_label = "jobs started (%)", .y_max = 100},
                              lines)});
  }
  for (TracePlot& p : SharePlots(all)) plots.push_back(std::move(p));
  return plots;
}

std::string RenderTraceReport(const std::string& title, const std::string& note,
                              const std::vector<PolicyRuns>& all, const nlohmann::json& summaries) {
  std::string html = fmt::format(R"(<!doctype html>
<html><head><meta charset="utf-8"><title>Tessel trace: {0}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:24px auto;color:#222}}
table{{border-collapse:collapse;margin:8px 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
th{{background:#f4f4f4}}td:first-child{{text-align:left}}.note{{color:#555;font-size:13px}}</style></head><body>
<h1>What users wait for: {0}</h1>
<p class="note">{1}</p>
<table><tr><th>policy</th><th>jobs</th><th>never started</th><th>delay p50 s</th><th>p95</th><th>p99</th>
<th>JCT p50 s</th><th>slowdown p95</th><th>GPU alloc % (arrival window)</th><th>alloc % (run)</th><th>frag % (mean)</th>
<th>evictions</th><th>GPU-h lost</th><th>makespan h</th></tr>
)",
                                 HtmlEscape(title), HtmlEscape(note));
  for (const nlohmann::json& s : summaries) {
    StrAppend(&html, fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                                 "<td>{:.2f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{}</td><td>{:.1f}</td><td>{:.1f}</td></tr>\n",
                                 HtmlEscape(s["policy"].get<std::string>()), s["jobs"].get<int64_t>(),
                                 s["queued_at_end"].get<int64_t>(), s["delay_s"]["p50"].get<int64_t>(),
                                 s["delay_s"]["p95"].get<int64_t>(), s["delay_s"]["p99"].get<int64_t>(),
                                 s["jct_s"]["p50"].get<int64_t>(), s["slowdown_milli"]["p95"].get<int64_t>() / 1000.0,
                                 s["alloc_pct"].get<double>(), s["alloc_pct_run"].get<double>(),
                                 s["frag_pct"].get<double>(), s["evictions"].get<int64_t>(), s["lost_gpu_hours"].get<double>(), s["makespan_s"].get<int64_t>() / 3600.0));
  }
  html += "</table>\n";
  // Per size class: delay percentiles of each policy.
  const std::vector<std::string> classes = SizeClassesIn(summaries);
  html += "<h2>Queueing delay by size class (s, p50 / p95 / p99)</h2>\n<table><tr><th>policy</th>";
  for (const std::string& c : classes) StrAppend(&html, "<th>", HtmlEscape(c), "</th>");
  html += "</tr>\n";
  for (const nlohmann::json& s : summaries) {
    StrAppend(&html, "<tr><td>", HtmlEscape(s["policy"].get<std::string>()), "</td>");
    for (const std::string& c : classes) {
      const nlohmann::json d = s["delay_by_class"].value(c, nlohmann::json::object());
      StrAppend(&html, "<td>", d.empty() ? "-" : fmt::format("{} / {} / {}", d["p50"].get<int64_t>(), d["p95"].get<int64_t>(),
                                                             d["p99"].get<int64_t>()), "</td>");
    }
    html += "</tr>\n";
  }
  html += "</table>\n";
  if (!summaries.empty() && summaries.front().contains("moves")) {
    html += "<h2>Moves and preemptions</h2>\n<table><tr><th>policy</th><th>moves</th><th>per 100 jobs</th>"
            "<th>preemptions</th><th>per 100 jobs</th><th>GPU-h lost to moves</th><th>GPU-h lost to preemptions</th></tr>\n";
    for (const nlohmann::json& s : summaries) {
      StrAppend(&html, fmt::format("<tr><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td><td>{:.2f}</td><td>{:.1f}</td><td>{:.1f}</td></tr>\n",
                                   HtmlEscape(s["policy"].get<std::string>()), s["moves"].get<int64_t>(),
                                   s["moves_per_100_jobs"].get<double>(), s["preemptions"].get<int64_t>(),
                                   s["preemptions_per_100_jobs"].get<double>(), s["lost_gpu_hours_moves"].get<double>(),
                                   s["lost_gpu_hours_preemptions"].get<double>()));
    }
    html += "</table>\n";
  }
  if (!summaries.empty() && summaries.front().contains("shares")) {
    html += "<h2>GPUs held against entitlement while in demand</h2>\n<table><tr><th>policy</th><th>queue or cohort</th>"
            "<th>mean GPUs</th><th>mean entitled</th><th>mean |held - entitled|</th><th>%</th>"
            "<th>longest &gt;10 % off (s)</th><th>longest &gt;10 % below (s)</th>"
            "<th>longest with a waiting job that fits (s)</th><th>first demand (s)</th>"
            "<th>time to share (s)</th><th>evictions</th></tr>\n";
    for (const nlohmann::json& s : summaries) {
      for (const auto& [name, q] : s["shares"].items()) {
        StrAppend(&html, fmt::format("<tr><td>{}</td><td>{} ({})</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.2f}</td>"
                                     "<td>{:.1f}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                                     HtmlEscape(s["policy"].get<std::string>()), HtmlEscape(name),
                                     q["kind"].get<std::string>(), q["mean_gpus"].get<double>(),
                                     q["mean_entitled_gpus"].get<double>(), q["mean_abs_dev_gpus"].get<double>(),
                                     q["mean_abs_dev_pct"].get<double>(), q["longest_off_10pct_s"].get<int64_t>(),
                                     q["longest_below_10pct_s"].get<int64_t>(),
                                     q["longest_waiting_job_fits_s"].get<int64_t>(), q["first_demand_s"].get<int64_t>(),
                                     q["time_to_share_s"].get<int64_t>(), q["evictions"].get<int64_t>()));
      }
    }
    html += "</table>\n";
  }
  for (const TracePlot& plot : TracePlots(all, summaries)) {
    StrAppend(&html, "<h2>", HtmlEscape(plot.heading), "</h2>\n", plot.svg);
  }
  html += "</body></html>\n";
  return html;
}

}  // namespace tessel::bench
