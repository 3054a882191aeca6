// Inline SVG line plots and HTML escaping for the bench's self-contained HTML reports
// (`tessel-bench inflate`, `tessel-bench trace`). No scripts, no external files.
//
//   std::string svg = LinePlot({.title = "GPU allocation", .x_label = "hours", .x_max = 48,
//                               .y_label = "%", .y_max = 100}, {{"fgd", PlotColor(0), false, pts}});
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessel::bench {

struct PlotLine {
  std::string label;
  std::string color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // NaN y lifts the pen
};

struct PlotAxes {
  std::string title;
  std::string x_label;
  double x_min = 0, x_max = 1;
  std::string y_label;
  double y_min = 0, y_max = 1;
  int x_ticks = 10;  // intervals
  int y_ticks = 5;
};

std::string LinePlot(const PlotAxes& axes, const std::vector<PlotLine>& lines);
// The i-th color of the reports' palette.
std::string PlotColor(size_t i);
std::string HtmlEscape(std::string_view s);

}  // namespace tessel::bench
