// line_plot_svg and save_line_plot_svg: curves as SVG (text, or a file), as matplotlib draws them: a
// framed plot area with light grid lines at "nice" tick values (1, 2 or 5
// times a power of ten), a 5% margin around the data, tab10 colours, and a
// legend where it covers no line and no point (matplotlib's loc="best"):
// the first free one of nine places inside the frame, else right of it.
#include <qkv/core/error.hpp>
#include <qkv/viz/plot.hpp>

#include <algorithm>
#include <array>
#include <cmath>

#include "viz/common.hpp"
#include "viz/svg.hpp"

namespace qkv::viz {

namespace {

struct Box {
  double x0, y0, x1, y1;
};

// Whether the segment (ax, ay)-(bx, by) meets the box (Liang–Barsky clipping:
// the part of the segment's parameter range [0, 1] inside all four edges).
bool crosses(const Box& b, double ax, double ay, double bx, double by) {
  double t0 = 0, t1 = 1;
  const double dx = bx - ax, dy = by - ay;
  auto edge = [&](double p, double q) {  // the segment's side of one edge: p t <= q
    if (p == 0) return q >= 0;
    const double t = q / p;
    if (p < 0)
      t0 = std::max(t0, t);
    else
      t1 = std::min(t1, t);
    return t0 <= t1;
  };
  return edge(-dx, ax - b.x0) && edge(dx, b.x1 - ax) && edge(-dy, ay - b.y0) && edge(dy, b.y1 - ay);
}

// The picture of line_plot_svg and save_line_plot_svg; op names the caller in errors.
std::string plot_picture(const std::vector<Series>& series, const PlotOptions& opt, const char* op) {
  detail::PlotRange r = detail::plot_range(series, op);
  if (opt.width < 2 || opt.height < 2)
    fail("{}: width and height must be at least 2, got {} and {}", op, opt.width, opt.height);
  // 5% of room around the data, as matplotlib leaves
  const double mx = (r.xmax - r.xmin) * 0.05, my = (r.ymax - r.ymin) * 0.05;
  const double xmin = r.xmin - mx, xmax = r.xmax + mx, ymin = r.ymin - my, ymax = r.ymax + my;

  const std::vector<double> xticks = detail::nice_ticks(xmin, xmax, 5), yticks = detail::nice_ticks(ymin, ymax, 5);
  double tick_width = 0;
  for (double v : yticks) tick_width = std::max(tick_width, detail::text_extent(detail::num(v), 11));

  const double width = opt.width * 10.0, height = opt.height * 25.0;
  const double left = 10 + (opt.ylabel.empty() ? 0 : 22) + tick_width + 8, right = width - 20;
  const double top = 10 + (opt.title.empty() ? 10 : 30), bottom = height - (opt.xlabel.empty() ? 30 : 50);
  if (right - left < 20 || bottom - top < 20)
    fail("{}: {} x {} cells leave no room to plot", op, opt.width, opt.height);
  auto X = [&](double x) { return left + (x - xmin) / (xmax - xmin) * (right - left); };
  auto Y = [&](double y) { return bottom - (y - ymin) / (ymax - ymin) * (bottom - top); };

  std::string svg;  // everything but the document's start, whose width the legend may still change
  for (double v : xticks) {
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e0e0e0\"/>\n", X(v),
                       top, bottom);
    svg += detail::svg_text(X(v), bottom + 16, detail::num(v), {.size = 11, .cls = "tick"});
  }
  for (double v : yticks) {
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#e0e0e0\"/>\n", left,
                       Y(v), right);
    svg += detail::svg_text(left - 6, Y(v) + 4, detail::num(v), {.anchor = "end", .size = 11, .cls = "tick"});
  }
  svg += fmt::format(
      "<rect class=\"axes\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
      "stroke=\"black\"/>\n",
      left, top, right - left, bottom - top);
  if (!opt.xlabel.empty()) svg += detail::svg_text((left + right) / 2, height - 14, opt.xlabel, {.cls = "xlabel"});
  if (!opt.ylabel.empty())  // upright along the frame, cut to its height
    svg += detail::svg_text(24, (top + bottom) / 2, detail::fit_text(opt.ylabel, bottom - top, 12),
                            {.rotate = -90, .cls = "ylabel"});

  // The series: a polyline per unbroken run of finite points, or a circle per point.
  std::vector<std::array<double, 4>> segments;  // (x, y) to (x, y), in px: what the legend must not cover
  std::vector<std::array<double, 2>> markers;
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const std::string color = to_hex(detail::series_color(k));
    std::vector<float> x = detail::x_of(s);
    std::string run;
    auto flush = [&] {
      if (!run.empty())
        svg +=
            fmt::format("<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                        color, run);
      run.clear();
    };
    bool joined = false;  // the point before this one is on the same line
    for (size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i]) || !std::isfinite(s.y[i])) {
        flush();
        joined = false;
        continue;
      }
      if (s.points) {
        svg += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", X(x[i]),
                           Y(s.y[i]), color);
        markers.push_back({X(x[i]), Y(s.y[i])});
        continue;
      }
      run += fmt::format("{}{:.1f},{:.1f}", run.empty() ? "" : " ", X(x[i]), Y(s.y[i]));
      if (joined)
        segments.push_back({X(x[i - 1]), Y(s.y[i - 1]), X(x[i]), Y(s.y[i])});
      else
        markers.push_back({X(x[i]), Y(s.y[i])});  // a line's first point (alone, a run of one point)
      joined = true;
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
  const double legend_height = 18.0 * static_cast<double>(series.size()) + 6;
  auto covers = [&](double lx, double ly) {  // the box, and 3 px around it
    const Box b{lx - 3, ly - 3, lx + legend_width + 3, ly + legend_height + 3};
    for (const auto& [ax, ay, bx, by] : segments)
      if (crosses(b, ax, ay, bx, by)) return true;
    for (const auto& [px, py] : markers)
      if (px >= b.x0 - 3 && px <= b.x1 + 3 && py >= b.y0 - 3 && py <= b.y1 + 3) return true;
    return false;
  };
  // matplotlib's order of places: upper right, upper left, lower left, lower right, centre right,
  // centre left, lower centre, upper centre, centre (8 px inside the frame).
  const double west = left + 8, east = right - legend_width - 8, centre = (left + right - legend_width) / 2;
  const double north = top + 8, south = bottom - legend_height - 8, middle = (top + bottom - legend_height) / 2;
  const std::array<std::array<double, 2>, 9> places = {{{east, north},
                                                        {west, north},
                                                        {west, south},
                                                        {east, south},
                                                        {east, middle},
                                                        {west, middle},
                                                        {centre, south},
                                                        {centre, north},
                                                        {centre, middle}}};
  double lx = right + 10, ly = top;  // outside the frame, right of it, when every place inside is covered
  double total_width = width + legend_width + 10;
  for (const auto& [px, py] : places)
    if (!covers(px, py)) {
      lx = px;
      ly = py;
      total_width = width;
      break;
    }
  svg += "<g class=\"legend\">\n";
  svg += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"white\" fill-opacity=\"0.8\" "
      "stroke=\"#cccccc\"/>\n",
      lx, ly, legend_width, legend_height);
  for (size_t k = 0; k < series.size(); ++k) {
    const double y = ly + 16 + 18.0 * static_cast<double>(k);
    const std::string color = to_hex(detail::series_color(k));
    if (series[k].points)
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", lx + 18, y - 4, color);
    else
      svg += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>\n", lx + 8,
          y - 4, lx + 28, y - 4, color);
    svg += detail::svg_text(lx + 34, y, names[k], {.anchor = "start", .size = 11, .cls = "legend-entry"});
  }
  svg += "</g>\n";
  std::string start = detail::svg_begin(total_width, height);
  if (!opt.title.empty()) start += detail::svg_text(total_width / 2, 26, opt.title, {.size = 16, .cls = "title"});
  return start + svg + detail::svg_end();
}

}  // namespace

std::string line_plot_svg(const std::vector<Series>& series, const PlotOptions& opt) {
  return plot_picture(series, opt, "line_plot_svg");
}

void save_line_plot_svg(const std::filesystem::path& file, const std::vector<Series>& series, const PlotOptions& opt) {
  const char* op = "save_line_plot_svg";
  detail::write_file(file, plot_picture(series, opt, op), op);
}

}  // namespace qkv::viz
