// heatmap_text: a matrix as coloured cells in the terminal.
//
//   title
//   queries  keys                 ylabel over the row labels, xlabel over the columns
//            a b c                column labels, written downwards, one cell apart
//           +------+
//   je      |  ::@@|              two characters per entry (a terminal cell is
//   suis    |==  **|              about twice as tall as it is wide)
//           +------+
//   scale: ' '=0 '.'=0.1 … '@'=0.9 (up to 1)
//   notes: pooling, constant, masked and NaN/Inf entries
//
// With colour an entry is two spaces on a 24-bit background (ESC[48;2;R;G;Bm);
// without, a character of the ramp " .:-=+*#%@", each a tenth of the range,
// the legend giving each character's lowest value. A matrix of fewer than 10
// whole numbers (Scale::whole) has a legend of those numbers alone, each
// with its character or colour: scale: ' '=0 ':'=1 '+'=2 '#'=3 '@'=4.
#include <qkv/core/error.hpp>
#include <qkv/viz/heatmap.hpp>

#include <algorithm>
#include <cmath>

#include "viz/common.hpp"

namespace qkv::viz {

using detail::Kind;

namespace {

constexpr const char* RAMP = " .:-=+*#%@";  // dark to bright, as viridis
constexpr int64_t LEVELS = 10;
constexpr int64_t LABEL_WIDTH = 8;  // row and column labels are cut to this many characters
constexpr int LEGEND_CELLS = 20;    // the colour ramp of the legend

std::string spaces(int64_t n) { return std::string(static_cast<size_t>(std::max<int64_t>(n, 0)), ' '); }

std::string pad(const std::string& s, int64_t width) { return s + spaces(width - detail::text_width(s)); }

std::string rtrim(std::string s) {
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

std::string background(Rgb c, const std::string& cell) {
  return fmt::format("\x1b[48;2;{};{};{}m{}\x1b[0m", c.r, c.g, c.b, cell);
}

// How one entry (or pooled block) is drawn, in the current mode.
struct Cells {
  bool color;
  const detail::Scale& scale;
  float masked_below;

  std::string masked() const { return color ? "··" : "xx"; }
  std::string nan() const { return "??"; }
  std::string inf() const { return "!!"; }
  std::string value(float v) const {
    float t = scale.t(v);
    if (color) return background(viridis(t), "  ");
    int64_t level = std::min<int64_t>(LEVELS - 1, static_cast<int64_t>(std::floor(t * LEVELS)));
    return std::string(2, RAMP[level]);
  }
  std::string operator()(float v) const {
    switch (detail::kind_of(v, masked_below)) {
      case Kind::Masked:
        return masked();
      case Kind::NaN:
        return nan();
      case Kind::Inf:
        return inf();
      case Kind::Value:
        break;
    }
    return value(v);
  }
};

// The legend: which colour or character stands for which value.
std::string legend(const Cells& cells) {
  const detail::Scale& s = cells.scale;
  if (s.empty) return "scale: none (every entry is masked, NaN or Inf)";
  if (s.constant) return fmt::format("{}, drawn as {}", detail::constant_note(s.lo), cells.value(s.lo));
  std::string out = "scale:";
  if (s.whole && s.hi - s.lo < LEVELS) {  // one number a colour or character, as its cells are drawn
    for (float k = s.lo; k <= s.hi; k += 1.0f)
      out += cells.color ? fmt::format(" {} {}", detail::num(k), cells.value(k))
                         : fmt::format(" '{}'={}", cells.value(k)[0], detail::num(k));
    return out;
  }
  if (cells.color) {
    out += fmt::format(" {} ", detail::num(s.lo));
    for (int i = 0; i < LEGEND_CELLS; ++i) out += background(viridis(static_cast<float>(i) / (LEGEND_CELLS - 1)), " ");
    return out + fmt::format(" {}", detail::num(s.hi));
  }
  for (int64_t k = 0; k < LEVELS; ++k) {
    double lowest = s.lo + (static_cast<double>(s.hi) - s.lo) * static_cast<double>(k) / LEVELS;
    out += fmt::format(" '{}'={}", RAMP[k], detail::num(lowest));
  }
  return out + fmt::format(" (up to {})", detail::num(s.hi));
}

}  // namespace

std::string heatmap_text(const Tensor& m, const HeatmapOptions& opt, const TextOptions& text) {
  const char* op = "heatmap_text";
  detail::Matrix full = detail::read_matrix(m, op);
  detail::check_labels(opt.row_labels, full.rows, "row_labels", op, m.shape());
  detail::check_labels(opt.col_labels, full.cols, "col_labels", op, m.shape());
  if (text.max_rows < 1 || text.max_cols < 1)
    fail("{}: max_rows and max_cols must be at least 1, got {} and {}", op, text.max_rows, text.max_cols);

  detail::Scale scale = detail::make_scale(full.values, opt, op);  // over every entry, not the block means
  detail::Pooled pooled = detail::pool(full, text.max_rows, text.max_cols, opt.masked_below);
  scale.whole = scale.whole && !pooled.pooled();  // a block's mean need not be whole
  const detail::Matrix& shown = pooled.m;
  const Cells cells{use_color(text.color), scale, opt.masked_below};

  std::vector<std::string> rows = detail::axis_labels(opt.row_labels, full.rows, pooled.block_rows);
  std::vector<std::string> cols = detail::axis_labels(opt.col_labels, full.cols, pooled.block_cols);
  int64_t width = detail::text_width(opt.ylabel);  // of the row-label column
  for (std::string& r : rows) {
    r = detail::truncate(r, LABEL_WIDTH);
    width = std::max(width, detail::text_width(r));
  }

  std::string out;
  auto line = [&out](const std::string& s) { out += rtrim(s) + "\n"; };
  if (!opt.title.empty()) line(opt.title);
  if (!opt.xlabel.empty() || !opt.ylabel.empty()) line(pad(opt.ylabel, width) + "  " + opt.xlabel);

  // Column labels, each starting above its column (2 characters a column):
  // across on one line when each ends before the next label begins and the
  // last by the border's end (an axis's numbers every few columns), else
  // downwards, line k holding the k-th character of each (a token in every
  // column).
  std::vector<std::string> cut;  // each label, cut
  bool across = true;
  int64_t free_from = 0;  // the first offset, from the first column, that no label covers
  for (size_t c = 0; c < cols.size(); ++c) {
    cut.push_back(detail::truncate(cols[c], LABEL_WIDTH));
    if (cut.back().empty()) continue;
    const int64_t at = 2 * static_cast<int64_t>(c), end = at + detail::text_width(cut.back());
    across = across && at >= free_from && end <= 2 * shown.cols + 1;  // at most to the border's corner
    free_from = end + 1;                                              // and a space
  }
  if (across && free_from > 0) {  // (with no label at all, no line either way)
    std::string s = spaces(width + 2);
    int64_t used = 0;  // offset from the first column
    for (size_t c = 0; c < cut.size(); ++c) {
      if (cut[c].empty()) continue;
      s += spaces(2 * static_cast<int64_t>(c) - used) + cut[c];
      used = 2 * static_cast<int64_t>(c) + detail::text_width(cut[c]);
    }
    line(s);
  } else {
    std::vector<std::vector<std::string>> downwards;  // each label's characters
    size_t depth = 0;
    for (const std::string& c : cut) {
      downwards.push_back(detail::code_points(c));
      depth = std::max(depth, downwards.back().size());
    }
    for (size_t k = 0; k < depth; ++k) {
      std::string s = spaces(width + 2);
      for (const auto& label : downwards) s += (k < label.size() ? label[k] : " ") + " ";
      line(s);
    }
  }

  const std::string border = spaces(width) + " +" + std::string(static_cast<size_t>(2 * shown.cols), '-') + "+";
  line(border);
  for (int64_t r = 0; r < shown.rows; ++r) {
    std::string s = pad(rows[static_cast<size_t>(r)], width) + " |";
    for (int64_t c = 0; c < shown.cols; ++c) s += cells(shown.at(r, c));
    line(s + "|");
  }
  line(border);

  line(legend(cells));
  if (pooled.pooled()) line(detail::pool_note(full, pooled));
  if (scale.masked > 0)
    line(fmt::format("{}, drawn as {}", detail::masked_note(scale.masked, opt.masked_below), cells.masked()));
  if (scale.nonfinite > 0)
    line(fmt::format("{}, drawn as {} (NaN) and {} (Inf)", detail::nonfinite_note(scale.nonfinite), cells.nan(),
                     cells.inf()));
  return out;
}

}  // namespace qkv::viz
