// save_line_plot_svg: curves as an SVG file, as matplotlib draws them: a
// framed plot area with light grid lines at "nice" tick values (1, 2 or 5
// times a power of ten), a 5% margin around the data, tab10 colours, and a
// legend in the upper right corner.
#include <qkv/core/error.hpp>
#include <qkv/viz/plot.hpp>

#include <algorithm>
#include <cmath>

#include "viz/common.hpp"
#include "viz/svg.hpp"

namespace qkv::viz {

namespace {

// A step of 1, 2 or 5 times a power of ten that cuts `range` into about `count` parts.
double nice_step(double range, int count) {
  double raw = range / count;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / magnitude;
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
}

// The multiples of the step within [lo, hi].
std::vector<double> nice_ticks(double lo, double hi) {
  double step = nice_step(hi - lo, 5);
  std::vector<double> ticks;
  for (double k = std::ceil(lo / step); k * step <= hi + step * 1e-9; ++k) ticks.push_back(k * step == 0 ? 0 : k * step);
  return ticks;
}

}  // namespace

void save_line_plot_svg(const std::filesystem::path& file, const std::vector<Series>& series, const PlotOptions& opt) {
  const char* op = "save_line_plot_svg";
  detail::PlotRange r = detail::plot_range(series, op);
  if (opt.width < 2 || opt.height < 2) fail("{}: width and height must be at least 2, got {} and {}", op, opt.width, opt.height);
  // 5% of room around the data, as matplotlib leaves
  const double mx = (r.xmax - r.xmin) * 0.05, my = (r.ymax - r.ymin) * 0.05;
  const double xmin = r.xmin - mx, xmax = r.xmax + mx, ymin = r.ymin - my, ymax = r.ymax + my;

  const std::vector<double> xticks = nice_ticks(xmin, xmax), yticks = nice_ticks(ymin, ymax);
  double tick_width = 0;
  for (double v : yticks) tick_width = std::max(tick_width, detail::text_extent(detail::num(v), 11));

  const double width = opt.width * 10.0, height = opt.height * 25.0;
  const double left = 10 + (opt.ylabel.empty() ? 0 : 22) + tick_width + 8, right = width - 20;
  const double top = 10 + (opt.title.empty() ? 10 : 30), bottom = height - (opt.xlabel.empty() ? 30 : 50);
  if (right - left < 20 || bottom - top < 20) fail("{}: {} x {} cells leave no room to plot", op, opt.width, opt.height);
  auto X = [&](double x) { return left + (x - xmin) / (xmax - xmin) * (right - left); };
  auto Y = [&](double y) { return bottom - (y - ymin) / (ymax - ymin) * (bottom - top); };

  std::string svg = detail::svg_begin(width, height);
  if (!opt.title.empty()) svg += detail::svg_text(width / 2, 26, opt.title, {.size = 16, .cls = "title"});
  for (double v : xticks) {
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e0e0e0\"/>\n", X(v), top, bottom);
    svg += detail::svg_text(X(v), bottom + 16, detail::num(v), {.size = 11, .cls = "tick"});
  }
  for (double v : yticks) {
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#e0e0e0\"/>\n", left, Y(v), right);
    svg += detail::svg_text(left - 6, Y(v) + 4, detail::num(v), {.anchor = "end", .size = 11, .cls = "tick"});
  }
  svg += fmt::format("<rect class=\"axes\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"black\"/>\n",
                     left, top, right - left, bottom - top);
  if (!opt.xlabel.empty()) svg += detail::svg_text((left + right) / 2, height - 14, opt.xlabel, {.cls = "xlabel"});
  if (!opt.ylabel.empty())
    svg += detail::svg_text(24, (top + bottom) / 2, opt.ylabel, {.rotate = -90, .cls = "ylabel"});

  // The series: a polyline per unbroken run of finite points, or a circle per point.
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const std::string color = to_hex(detail::series_color(k));
    std::vector<float> x = detail::x_of(s);
    std::string run;
    auto flush = [&] {
      if (!run.empty())
        svg += fmt::format("<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                           color, run);
      run.clear();
    };
    for (size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i]) || !std::isfinite(s.y[i])) {
        flush();
        continue;
      }
      if (s.points)
        svg += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", X(x[i]), Y(s.y[i]), color);
      else
        run += fmt::format("{}{:.1f},{:.1f}", run.empty() ? "" : " ", X(x[i]), Y(s.y[i]));
    }
    flush();
  }

  // The legend, upper right inside the frame.
  double legend_width = 0;
  std::vector<std::string> names;
  for (size_t k = 0; k < series.size(); ++k) {
    names.push_back(series[k].name.empty() ? fmt::format("series {}", k) : series[k].name);
    legend_width = std::max(legend_width, detail::text_extent(names.back(), 11));
  }
  legend_width += 40;
  const double lx = right - legend_width - 8, ly = top + 8;
  svg += "<g class=\"legend\">\n";
  svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"white\" fill-opacity=\"0.8\" stroke=\"#cccccc\"/>\n",
                     lx, ly, legend_width, 18.0 * static_cast<double>(series.size()) + 6);
  for (size_t k = 0; k < series.size(); ++k) {
    const double y = ly + 16 + 18.0 * static_cast<double>(k);
    const std::string color = to_hex(detail::series_color(k));
    if (series[k].points)
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", lx + 18, y - 4, color);
    else
      svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                         lx + 8, y - 4, lx + 28, y - 4, color);
    svg += detail::svg_text(lx + 34, y, names[k], {.anchor = "start", .size = 11, .cls = "legend-entry"});
  }
  svg += "</g>\n";
  detail::write_file(file, svg + detail::svg_end(), op);
}

}  // namespace qkv::viz
