// line_plot_text: curves in the terminal.
//
//   title
//   ylabel
//   4 +    *          tick values on the left: the top, the middle and the bottom
//     |   *
//   2 +  +*
//     |  *
//   0 +**
//     +-----
//      0 1 2          tick values below: left end, middle, right end (the middle
//                     on the row or column nearest to it)
//        xlabel
//   * train   + valid one legend entry per series
//
// Without colour every cell holds one series' marker character, and a line
// is the cells on the way between two points. With colour every cell is a
// braille character, 2 x 4 dots, so a curve is drawn at 2 x 4 times the
// resolution, in its series' colour (a cell two series share takes the later's).
//
// A value maps to the nearest dot: column floor((x - xmin) / (xmax - xmin) * (columns - 1) + 1/2),
// row floor((ymax - y) / (ymax - ymin) * (rows - 1) + 1/2), row 0 at the top.
#include <qkv/core/error.hpp>
#include <qkv/viz/plot.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "viz/common.hpp"

namespace qkv::viz {

namespace {

constexpr const char* MARKERS = "*+ox#@%&";  // series 0, 1, …, when plain

std::string rtrim(std::string s) {
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

std::string spaces(int64_t n) { return std::string(static_cast<size_t>(std::max<int64_t>(n, 0)), ' '); }

// The braille character U+2800 + dots, as UTF-8.
std::string braille(uint8_t dots) {
  unsigned cp = 0x2800u + dots;
  std::string s;
  s += static_cast<char>(0xE0u | (cp >> 12));
  s += static_cast<char>(0x80u | ((cp >> 6) & 0x3Fu));
  s += static_cast<char>(0x80u | (cp & 0x3Fu));
  return s;
}

// The dot at (column dx, row dy) of a braille cell: dots 1-2-3 / 4-5-6 down
// the two columns, then 7 and 8 on the bottom row.
uint8_t braille_bit(int64_t dx, int64_t dy) {
  static const uint8_t BITS[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};
  return BITS[dy][dx];
}

std::string in_color(Rgb c, const std::string& s) {
  return fmt::format("\x1b[38;2;{};{};{}m{}\x1b[0m", c.r, c.g, c.b, s);
}

int64_t nearest(double v) { return static_cast<int64_t>(std::floor(v + 0.5)); }

// A tick value; one within a thousandth of the axis' span of 0 is 0 (the
// midpoint of -0.99999 and 1 is not worth "-5e-06").
std::string tick(double v, double span) { return std::abs(v) < span * 1e-3 ? "0" : detail::num(v); }

// width x height cells, each (sub_x x sub_y) dots: 1 x 1 plain, 2 x 4 braille.
class Canvas {
 public:
  Canvas(int64_t width, int64_t height, bool braille_dots)
      : width_(width),
        height_(height),
        sub_x_(braille_dots ? 2 : 1),
        sub_y_(braille_dots ? 4 : 1),
        dots_(static_cast<size_t>(width * height)),
        owner_(static_cast<size_t>(width * height), -1) {}
  int64_t dots_x() const { return width_ * sub_x_; }
  int64_t dots_y() const { return height_ * sub_y_; }

  void plot(int64_t x, int64_t y, int series) {
    size_t cell = static_cast<size_t>((y / sub_y_) * width_ + x / sub_x_);
    owner_[cell] = series;
    if (sub_x_ == 2) dots_[cell] |= braille_bit(x % 2, y % 4);
  }
  // Every dot on the way from (x0, y0) to (x1, y1), one step per dot along the longer side.
  void line(int64_t x0, int64_t y0, int64_t x1, int64_t y1, int series) {
    int64_t steps = std::max(std::abs(x1 - x0), std::abs(y1 - y0));
    if (steps == 0) return plot(x0, y0, series);
    for (int64_t i = 0; i <= steps; ++i) {
      double f = static_cast<double>(i) / static_cast<double>(steps);
      plot(x0 + nearest(static_cast<double>(x1 - x0) * f), y0 + nearest(static_cast<double>(y1 - y0) * f), series);
    }
  }
  std::string row(int64_t r, bool color) const {
    std::string s;
    for (int64_t c = 0; c < width_; ++c) {
      size_t cell = static_cast<size_t>(r * width_ + c);
      int series = owner_[cell];
      if (series < 0)
        s += ' ';
      else if (color)
        s += in_color(detail::series_color(static_cast<size_t>(series)), braille(dots_[cell]));
      else
        s += MARKERS[static_cast<size_t>(series) % 8];
    }
    return s;
  }

 private:
  int64_t width_, height_, sub_x_, sub_y_;
  std::vector<uint8_t> dots_;  // braille dots per cell
  std::vector<int> owner_;     // the series drawn last in each cell, -1 for none
};

// The x tick line: xmin under the first column, xmax ending under the last,
// and the midpoint centred under its column when there is room.
std::string x_ticks(const detail::PlotRange& r, int64_t width) {
  const double span = r.xmax - r.xmin;
  std::string left = tick(r.xmin, span), right = tick(r.xmax, span), mid = tick((r.xmin + r.xmax) / 2, span);
  int64_t mid_col = nearest(0.5 * static_cast<double>(width - 1));
  auto len = [](const std::string& s) { return static_cast<int64_t>(s.size()); };
  int64_t right_start = std::max(width - len(right), len(left) + 1);
  std::string s = spaces(right_start + len(right));
  s.replace(0, left.size(), left);
  s.replace(static_cast<size_t>(right_start), right.size(), right);
  int64_t mid_start = mid_col - len(mid) / 2;
  if (mid_start >= len(left) + 1 && mid_start + len(mid) + 1 <= right_start)
    s.replace(static_cast<size_t>(mid_start), mid.size(), mid);
  return s;
}

}  // namespace

std::string line_plot_text(const std::vector<Series>& series, const PlotOptions& opt, const TextOptions& text) {
  const char* op = "line_plot_text";
  detail::PlotRange r = detail::plot_range(series, op);
  if (opt.width < 2 || opt.height < 2)
    fail("{}: width and height must be at least 2, got {} and {}", op, opt.width, opt.height);
  const int64_t W = opt.width, H = opt.height;
  // The canvas holds every cell: refuse a size no terminal shows before allocating it.
  constexpr int64_t kMaxCells = int64_t{1} << 20;
  if (W * H > kMaxCells)
    fail("{}: a plot of {} x {} cells is too large for a terminal (at most {} cells)", op, W, H, kMaxCells);
  const bool color = use_color(text.color);

  Canvas canvas(W, H, /*braille_dots=*/color);
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    std::vector<float> x = detail::x_of(s);
    bool joined = false;  // whether the next point joins the last one (not after a NaN, nor at the start)
    int64_t last_x = 0, last_y = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i]) || !std::isfinite(s.y[i])) {
        joined = false;
        continue;
      }
      int64_t px = nearest((x[i] - r.xmin) / (r.xmax - r.xmin) * static_cast<double>(canvas.dots_x() - 1));
      int64_t py = nearest((r.ymax - s.y[i]) / (r.ymax - r.ymin) * static_cast<double>(canvas.dots_y() - 1));
      if (joined && !s.points)
        canvas.line(last_x, last_y, px, py, static_cast<int>(k));
      else
        canvas.plot(px, py, static_cast<int>(k));
      joined = true;
      last_x = px;
      last_y = py;
    }
  }

  // Tick values: ymax on the top row, ymin on the bottom one, the midpoint on its nearest row.
  std::vector<std::string> ticks(static_cast<size_t>(H));
  const double span = r.ymax - r.ymin;
  ticks.front() = tick(r.ymax, span);
  ticks.back() = tick(r.ymin, span);
  int64_t mid_row = nearest(0.5 * static_cast<double>(H - 1));
  if (mid_row > 0 && mid_row < H - 1) ticks[static_cast<size_t>(mid_row)] = tick((r.ymin + r.ymax) / 2, span);
  size_t tick_width = 0;
  for (const std::string& t : ticks) tick_width = std::max(tick_width, t.size());
  const auto L = static_cast<int64_t>(tick_width);

  std::string out;
  auto line = [&out](const std::string& s) { out += rtrim(s) + "\n"; };
  if (!opt.title.empty()) line(opt.title);
  if (!opt.ylabel.empty()) line(opt.ylabel);
  for (int64_t row = 0; row < H; ++row) {
    const std::string& label = ticks[static_cast<size_t>(row)];
    line(spaces(L - static_cast<int64_t>(label.size())) + label + (label.empty() ? " |" : " +") +
         canvas.row(row, color));
  }
  line(spaces(L) + " +" + std::string(static_cast<size_t>(W), '-'));
  line(spaces(L + 2) + x_ticks(r, W));
  if (!opt.xlabel.empty())
    line(spaces(L + 2 + std::max<int64_t>(0, (W - detail::text_width(opt.xlabel)) / 2)) + opt.xlabel);

  std::string legend;
  for (size_t k = 0; k < series.size(); ++k) {
    std::string name = series[k].name.empty() ? fmt::format("series {}", k) : series[k].name;
    std::string mark =
        color ? in_color(detail::series_color(k), series[k].points ? "•" : "━") : std::string(1, MARKERS[k % 8]);
    legend += (k > 0 ? "   " : "") + mark + " " + name;
  }
  line(legend);
  return out;
}

}  // namespace qkv::viz
