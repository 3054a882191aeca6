// HTML + SVG rendering of the inflation results (see report.h).
#include "bench/inflate/report.h"

#include <cmath>

#include "scheduler/api/quantity.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

struct Line {
  std::string label;
  std::string color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;
};

std::string Plot(const std::string& title, const std::string& y_label, double y_min, double y_max,
                 const std::vector<Line>& lines) {
  const double w = 640, h = 380, left = 56, right = 150, top = 28, bottom = 44;
  const double pw = w - left - right, ph = h - top - bottom;
  auto X = [&](double x) { return left + x / 130.0 * pw; };
  auto Y = [&](double y) { return top + (1.0 - (y - y_min) / (y_max - y_min)) * ph; };
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' viewBox='0 0 {} {}' "
      "font-family='sans-serif' font-size='11'>\n<text x='{}' y='16' font-size='13' font-weight='bold'>{}</text>\n",
      w, h, w, h, left, Escape(title));
  for (int x = 0; x <= 130; x += 10) {
    StrAppend(&svg, fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' stroke='#eee'/>"
                                "<text x='{0:.1f}' y='{3:.1f}' text-anchor='middle'>{4}</text>\n",
                                X(x), top, top + ph, top + ph + 14, x));
  }
  const double step = (y_max - y_min) / 5;
  for (int k = 0; k <= 5; ++k) {
    const double y = y_min + k * step;
    StrAppend(&svg, fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{2:.1f}' y2='{1:.1f}' stroke='#eee'/>"
                                "<text x='{3:.1f}' y='{4:.1f}' text-anchor='end'>{5:.0f}</text>\n",
                                left, Y(y), left + pw, left - 4, Y(y) + 4, y));
  }
  StrAppend(&svg, fmt::format("<rect x='{}' y='{}' width='{}' height='{}' fill='none' stroke='#888'/>\n", left, top, pw, ph));
  StrAppend(&svg, fmt::format("<text x='{:.1f}' y='{:.1f}' text-anchor='middle'>arrived workload (% of GPU capacity)</text>\n",
                              left + pw / 2, h - 8));
  StrAppend(&svg, fmt::format("<text transform='translate(14,{:.1f}) rotate(-90)' text-anchor='middle'>{}</text>\n",
                              top + ph / 2, Escape(y_label)));
  int legend = 0;
  for (const Line& line : lines) {
    std::string d;
    bool pen = false;
    for (const auto& [x, y] : line.points) {
      if (std::isnan(y)) {
        pen = false;
        continue;
      }
      StrAppend(&d, pen ? " L" : " M", fmt::format("{:.1f},{:.1f}", X(x), Y(std::clamp(y, y_min, y_max))));
      pen = true;
    }
    StrAppend(&svg, fmt::format("<path d='{}' fill='none' stroke='{}' stroke-width='{}'{}><title>{}</title></path>\n", d,
                                line.color, line.dashed ? 1.2 : 1.8, line.dashed ? " stroke-dasharray='5,3'" : "",
                                Escape(line.label)));
    const double ly = top + 12 + 15 * legend++;
    StrAppend(&svg, fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{2:.1f}' y2='{1:.1f}' stroke='{3}' stroke-width='2'{4}/>"
                                "<text x='{5:.1f}' y='{6:.1f}'>{7}</text>\n",
                                left + pw + 8, ly, left + pw + 28, line.color,
                                line.dashed ? " stroke-dasharray='5,3'" : "", left + pw + 32, ly + 4, Escape(line.label)));
  }
  svg += "</svg>\n";
  return svg;
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
  std::vector<Line> alloc, frag, alloc_zoom;
  for (size_t i = 0; i < in.series.size(); ++i) {
    const Series& s = in.series[i];
    const std::string color = kColors[i % std::size(kColors)];
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
                                 Escape(in.workload), in.nodes, in.capacity_milli / 1000, in.pods, in.pods_per_run,
                                 fmt::format("{}.{:03d}", in.tune_milli / 1000, in.tune_milli % 1000), StrJoin(in.seeds, ","), in.seconds);
  for (const Series& s : in.series) {
    std::string pub = "-";
    for (const auto& [x, y] : s.ref_alloc) {
      if (x == 100) pub = fmt::format("{:.2f}", 100.0 - y);
    }
    StrAppend(&html, fmt::format("<tr><td>{}</td><td>{:.2f}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td></tr>\n",
                                 Escape(s.policy), 100.0 - s.curve.alloc_pct[100], pub, s.curve.alloc_pct_sd[100],
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
