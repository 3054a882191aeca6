// Inline SVG line plots for the bench reports (see svg.h).
#include "bench/report/svg.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "scheduler/util/strings.h"

namespace tessel::bench {

std::string PlotColor(size_t i) {
  static constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kColors[i % std::size(kColors)];
}

std::string HtmlEscape(std::string_view s) {
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

// Tick labels: whole numbers when the step is, else one decimal.
static std::string Tick(double v, double step) {
  return std::fabs(step - std::round(step)) < 1e-9 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v);
}

std::string LinePlot(const PlotAxes& a, const std::vector<PlotLine>& lines) {
  const double w = 640, h = 380, left = 56, right = 150, top = 28, bottom = 44;
  const double pw = w - left - right, ph = h - top - bottom;
  const double xr = a.x_max > a.x_min ? a.x_max - a.x_min : 1, yr = a.y_max > a.y_min ? a.y_max - a.y_min : 1;
  auto X = [&](double x) { return left + (x - a.x_min) / xr * pw; };
  auto Y = [&](double y) { return top + (1.0 - (y - a.y_min) / yr) * ph; };
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' viewBox='0 0 {} {}' "
      "font-family='sans-serif' font-size='11'>\n<text x='{}' y='16' font-size='13' font-weight='bold'>{}</text>\n",
      w, h, w, h, left, HtmlEscape(a.title));
  const double xs = xr / std::max(1, a.x_ticks);
  for (int k = 0; k <= a.x_ticks; ++k) {
    const double x = a.x_min + k * xs;
    StrAppend(&svg, fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' stroke='#eee'/>"
                                "<text x='{0:.1f}' y='{3:.1f}' text-anchor='middle'>{4}</text>\n",
                                X(x), top, top + ph, top + ph + 14, Tick(x, xs)));
  }
  const double ys = yr / std::max(1, a.y_ticks);
  for (int k = 0; k <= a.y_ticks; ++k) {
    const double y = a.y_min + k * ys;
    StrAppend(&svg, fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{2:.1f}' y2='{1:.1f}' stroke='#eee'/>"
                                "<text x='{3:.1f}' y='{4:.1f}' text-anchor='end'>{5}</text>\n",
                                left, Y(y), left + pw, left - 4, Y(y) + 4, Tick(y, ys)));
  }
  StrAppend(&svg, fmt::format("<rect x='{}' y='{}' width='{}' height='{}' fill='none' stroke='#888'/>\n", left, top, pw, ph));
  StrAppend(&svg, fmt::format("<text x='{:.1f}' y='{:.1f}' text-anchor='middle'>{}</text>\n", left + pw / 2, h - 8,
                              HtmlEscape(a.x_label)));
  StrAppend(&svg, fmt::format("<text transform='translate(14,{:.1f}) rotate(-90)' text-anchor='middle'>{}</text>\n",
                              top + ph / 2, HtmlEscape(a.y_label)));
  int legend = 0;
  for (const PlotLine& line : lines) {
    std::string d;
    bool pen = false;
    for (const auto& [x, y] : line.points) {
      if (std::isnan(y)) {
        pen = false;
        continue;
      }
      StrAppend(&d, pen ? " L" : " M",
                fmt::format("{:.1f},{:.1f}", X(std::clamp(x, a.x_min, a.x_max)), Y(std::clamp(y, a.y_min, a.y_max))));
      pen = true;
    }
    StrAppend(&svg, fmt::format("<path d='{}' fill='none' stroke='{}' stroke-width='{}'{}><title>{}</title></path>\n", d,
                                line.color, line.dashed ? 1.2 : 1.8, line.dashed ? " stroke-dasharray='5,3'" : "",
                                HtmlEscape(line.label)));
    const double ly = top + 12 + 15 * legend++;
    StrAppend(&svg, fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{2:.1f}' y2='{1:.1f}' stroke='{3}' stroke-width='2'{4}/>"
                                "<text x='{5:.1f}' y='{6:.1f}'>{7}</text>\n",
                                left + pw + 8, ly, left + pw + 28, line.color,
                                line.dashed ? " stroke-dasharray='5,3'" : "", left + pw + 32, ly + 4,
                                HtmlEscape(line.label)));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tessel::bench
