// HTML + SVG rendering of the inflation results (see report.h).
#include "bench/inflate/report.h"

#include "bench/report/svg.h"

#include <cmath>

#include "scheduler/api/quantity.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

std::string Plot(const std::string& title, const std::string& y_label, double y_min, double y_max,
                 const std::vector<PlotLine>& lines) {
  return LinePlot({.title = title, .x_label = "arrived workload (% of GPU capacity)", .x_min = 0, .x_max = 130,
                   .y_label = y_label, .y_min = y_min, .y_max = y_max, .x_ticks = 13, .y_ticks = 5},
                  lines);
}

std::vector<std::pair<double, double>> Points(const std::vector<double>& ys) {
  std::vector<std::pair<double, double>> out;
  for (size_t x = 0; x < ys.size(); ++x) out.push_back({static_cast<double>(x), ys[x]});
  return out;
}

std::vector<std::pair<double, double>> Points(const std::vector<std::pair<int, double>>& ref) {
  std::vector<std::pair<double, double>> out;
  for (const auto& [x, y] : ref) out.push_back({static_cast<double>(x), y});
  return out;
}

}  // namespace

std::string RenderReport(const ReportInput& in) {
  std::vector<PlotLine> alloc, frag;
  for (size_t i = 0; i < in.series.size(); ++i) {
    const Series& s = in.series[i];
    const std::string color = PlotColor(i);
    alloc.push_back({s.policy, color, false, Points(s.curve.alloc_pct)});
    frag.push_back({s.policy, color, false, Points(s.curve.frag_amount_pct)});
    if (!s.ref_alloc.empty()) alloc.push_back({s.policy + " (published)", color, true, Points(s.ref_alloc)});
    if (!s.ref_frag.empty()) frag.push_back({s.policy + " (published)", color, true, Points(s.ref_frag)});
  }
  std::string html = fmt::format(R"(<!doctype html>
<html><head><meta charset="utf-8"><title>Tessel inflation experiment: {0}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:24px auto;color:#222}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 10px;text-align:right}}
th{{background:#f4f4f4}}td:first-child{{text-align:left}}.note{{color:#555;font-size:13px}}</style></head><body>
<h1>GPU allocation under workload inflation: {0}</h1>
<p class="note">The FGD paper's experiment (Weng et al., USENIX ATC'23) run through Tessel's scheduling core:
{1} nodes, {2} GPUs; {3} trace pods inflated to {4} per run (tune {5}); seeds {6}; every pod is scheduled once,
in a seeded random order, and never leaves. Lines are means over the seeds at each arrived %; dashed lines are
the authors' published results where they exist. Wall time {7:.1f}s.</p>
<table><tr><th>policy</th><th>unallocated GPU % at 100% arrived</th><th>published</th><th>SD over seeds</th>
<th>fragmented GPU % of capacity at 100%</th><th>frag % of idle at 100%</th></tr>
)",
                                 HtmlEscape(in.workload), in.nodes, in.capacity_milli / 1000, in.pods, in.pods_per_run,
                                 fmt::format("{}.{:03d}", in.tune_milli / 1000, in.tune_milli % 1000), StrJoin(in.seeds, ","), in.seconds);
  for (const Series& s : in.series) {
    std::string pub = "-";
    for (const auto& [x, y] : s.ref_alloc) {
      if (x == 100) pub = fmt::format("{:.2f}", 100.0 - y);
    }
    StrAppend(&html, fmt::format("<tr><td>{}</td><td>{:.2f}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td></tr>\n",
                                 HtmlEscape(s.policy), 100.0 - s.curve.alloc_pct[100], pub, s.curve.alloc_pct_sd[100],
                                 s.curve.frag_amount_pct[100], s.curve.frag_rate_pct[100]));
  }
  html += "</table>\n<h2>GPU allocation</h2>\n";
  html += Plot("GPU allocation ratio vs arrived workload", "allocated GPU (% of capacity)", 0, 100, alloc);
  html += "<h2>Fragmentation</h2>\n";
  html += Plot("Fragmented GPU vs arrived workload", "fragmented GPU (% of capacity)", 0, 20, frag);
  html += "<p class=\"note\">Fragmentation as FGD defines it: the expected GPU that the trace's typical pods "
          "(the classes covering 95% of pods) cannot use, weighted by their frequency. Data: Alibaba "
          "cluster-trace-gpu-v2023 (openb), research use; cite Weng et al., ATC'23.</p>\n</body></html>\n";
  return html;
}

}  // namespace tessel::bench
