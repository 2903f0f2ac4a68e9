// heatmap_svg, heatmap_grid_svg and their save_ twins: matrices as SVG (text, or files).
//
// A heatmap is square cells, row 0 at the top and column 0 at the left (as
// matplotlib's imshow and d2l's show_heatmaps), row labels on the left,
// column labels below (turned upright when they do not fit a cell), the
// axis labels, and a colour bar on the right. Every cell carries a <title>
// (row, column and value), which a browser shows on hover. Masked cells are
// grey, NaN/Inf cells white with a red cross; the notes under the picture
// count them, and say when the colour scale is shared or fixed.
//
// Text is laid out by its estimated width (svg.hpp's text_extent), so that
// no two texts overlap and none leaves the picture: a title or label that
// would reach its neighbour is wrapped, set level instead of upright, or
// cut with "…" (tests/viz check every picture's text boxes).
#include <qkv/core/error.hpp>
#include <qkv/viz/heatmap.hpp>

#include <algorithm>
#include <cmath>

#include "viz/common.hpp"
#include "viz/svg.hpp"

namespace qkv::viz {

using detail::Kind;

namespace {

constexpr double MARGIN = 10, LABEL_SIZE = 11, GAP = 16;
constexpr int64_t SVG_MAX_CELLS = 256;   // per side; larger matrices are pooled
constexpr int64_t LABEL_WIDTH = 16;      // characters of a token label
constexpr double ROW_TITLE_WIDTH = 150;  // px: a grid's level row titles wrap at this width

// The axis labels of one matrix and the room they take.
struct Labels {
  std::vector<std::string> rows, cols;
  int64_t row_step = 1, col_step = 1;  // label every row_step-th row (small cells cannot hold every label)
  bool upright = false;                // column labels turned to read upwards
  double row_width = 0, col_height = 0;
};

Labels make_labels(const HeatmapOptions& opt, const detail::Matrix& full, const detail::Pooled& p, double cell) {
  Labels l;
  l.rows = detail::axis_labels(opt.row_labels, full.rows, p.block_rows);
  l.cols = detail::axis_labels(opt.col_labels, full.cols, p.block_cols);
  double widest_col = 0;
  for (std::string& r : l.rows) {
    r = detail::truncate(r, LABEL_WIDTH);
    l.row_width = std::max(l.row_width, detail::text_extent(r, LABEL_SIZE));
  }
  for (std::string& c : l.cols) {
    c = detail::truncate(c, LABEL_WIDTH);
    widest_col = std::max(widest_col, detail::text_extent(c, LABEL_SIZE));
  }
  l.row_step = l.col_step = static_cast<int64_t>(std::ceil(12.0 / cell));
  l.upright = widest_col > cell - 2;
  if (!l.upright) l.col_step = 1;
  l.col_height = l.upright ? widest_col + 6 : 16;
  return l;
}

std::string cell_markup(float v, float masked_below, const detail::Scale& scale, double x, double y, double cell,
                        const std::string& tip) {
  std::string rect = fmt::format("x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"", x, y, cell, cell);
  std::string title = fmt::format("<title>{}</title>", xml_escape(tip));
  switch (detail::kind_of(v, masked_below)) {
    case Kind::Value:
      return fmt::format("<rect class=\"cell\" {} fill=\"{}\">{}</rect>\n", rect, to_hex(viridis(scale.t(v))), title);
    case Kind::Masked:
      return fmt::format("<rect class=\"cell masked\" {} fill=\"#d9d9d9\">{}</rect>\n", rect, title);
    case Kind::NaN:
    case Kind::Inf:
      break;
  }
  // NaN/Inf: a crossed cell
  return fmt::format(
      "<g class=\"cell nonfinite\"><rect {} fill=\"white\" stroke=\"#d62728\">{}</rect>"
      "<path d=\"M{:.1f},{:.1f}L{:.1f},{:.1f}M{:.1f},{:.1f}L{:.1f},{:.1f}\" stroke=\"#d62728\"/></g>\n",
      rect, title, x, y, x + cell, y + cell, x + cell, y, x, y + cell);
}

// The cells of one (pooled) matrix with its top-left corner at (x0, y0), and
// its row/column labels when asked for.
std::string matrix_markup(const detail::Matrix& shown, const Labels& l, const detail::Scale& scale, float masked_below,
                          double x0, double y0, double cell, bool row_labels, bool col_labels) {
  std::string out;
  for (int64_t r = 0; r < shown.rows; ++r) {
    for (int64_t c = 0; c < shown.cols; ++c) {
      float v = shown.at(r, c);
      std::string tip = fmt::format("{}, {}: {}", l.rows[static_cast<size_t>(r)], l.cols[static_cast<size_t>(c)],
                                    std::isnan(v) ? "NaN" : detail::num(v));
      out += cell_markup(v, masked_below, scale, x0 + static_cast<double>(c) * cell, y0 + static_cast<double>(r) * cell,
                         cell, tip);
    }
  }
  const double bottom = y0 + static_cast<double>(shown.rows) * cell;
  if (row_labels)
    for (int64_t r = 0; r < shown.rows; r += l.row_step)
      out += detail::svg_text(x0 - 4, y0 + (static_cast<double>(r) + 0.5) * cell + 4, l.rows[static_cast<size_t>(r)],
                              {.anchor = "end", .size = LABEL_SIZE, .cls = "row-label"});
  if (col_labels) {
    for (int64_t c = 0; c < shown.cols; c += l.col_step) {
      double x = x0 + (static_cast<double>(c) + 0.5) * cell;
      const std::string& label = l.cols[static_cast<size_t>(c)];
      out += l.upright ? detail::svg_text(x + 4, bottom + 4, label,
                                          {.anchor = "end", .size = LABEL_SIZE, .rotate = -90, .cls = "col-label"})
                       : detail::svg_text(x, bottom + 13, label, {.size = LABEL_SIZE, .cls = "col-label"});
    }
  }
  return out;
}

// What the picture cannot show by colour alone; `pooling` is empty when nothing was pooled.
// Panels (several, in a grid) share one colour scale, and the note says so;
// a scale fixed by vmin and vmax is the same in every picture drawn with
// them, so that pictures compared side by side can be compared by colour.
std::vector<std::string> notes(const detail::Scale& scale, const HeatmapOptions& opt, const std::string& pooling,
                               int64_t panels = 1) {
  std::vector<std::string> out;
  const bool fixed = !std::isnan(opt.vmin) && !std::isnan(opt.vmax);
  const std::string limits = fmt::format("{} to {}", detail::num(scale.lo), detail::num(scale.hi));
  const std::string all = panels == 2 ? "both panels" : fmt::format("all {} panels", panels);
  if (panels > 1 && !scale.empty)
    out.push_back(fixed ? fmt::format("one colour scale, fixed at {}, for {}", limits, all)
                        : fmt::format("one colour scale for {}", all));
  else if (fixed && !scale.empty)
    out.push_back(fmt::format("colour scale fixed at {}", limits));
  if (scale.constant) out.push_back(detail::constant_note(scale.lo));
  if (scale.empty) out.emplace_back("no colour scale: every entry is masked, NaN or Inf");
  if (!pooling.empty()) out.push_back(pooling);
  if (scale.masked > 0) out.push_back(detail::masked_note(scale.masked, opt.masked_below) + ", drawn grey");
  if (scale.nonfinite > 0) out.push_back(detail::nonfinite_note(scale.nonfinite) + ", drawn crossed");
  return out;
}

// The notes under a picture, from y on (4 px more before the first); returns the widest.
double notes_markup(std::string& out, const std::vector<std::string>& lines, double y) {
  double widest = 0;
  y += 4;
  for (const std::string& s : lines) {
    y += 16;
    out += detail::svg_text(MARGIN, y, s, {.anchor = "start", .size = LABEL_SIZE, .cls = "note"});
    widest = std::max(widest, detail::text_extent(s, LABEL_SIZE));
  }
  return widest;
}

// The whole file: the title centred over the body, and the body (drawn
// from x = 0, `width` wide) centred under a title wider than it, instead
// of left at the left edge.
std::string picture(const std::string& title, std::string body, double width, double height) {
  const double total_width = std::max(width, detail::text_extent(title, 16) + 2 * MARGIN);
  if (total_width > width)
    body =
        fmt::format("<g class=\"body\" transform=\"translate({:.1f},0)\">\n{}</g>\n", (total_width - width) / 2, body);
  std::string svg = detail::svg_begin(total_width, height);
  if (!title.empty()) svg += detail::svg_text(total_width / 2, MARGIN + 16, title, {.size = 16, .cls = "title"});
  return svg + body + detail::svg_end();
}

double cell_size(int64_t rows, int64_t cols, double room, double largest) {
  return std::clamp(std::floor(room / static_cast<double>(std::max(rows, cols))), 2.0, largest);
}

// The picture of heatmap_svg and save_heatmap_svg; op names the caller in errors.
std::string heatmap_picture(const Tensor& m, const HeatmapOptions& opt, const char* op) {
  detail::Matrix full = detail::read_matrix(m, op);
  detail::check_labels(opt.row_labels, full.rows, "row_labels", op, m.shape());
  detail::check_labels(opt.col_labels, full.cols, "col_labels", op, m.shape());
  detail::Scale scale = detail::make_scale(full.values, opt, op);
  detail::Pooled pooled = detail::pool(full, SVG_MAX_CELLS, SVG_MAX_CELLS, opt.masked_below);
  scale.whole = scale.whole && !pooled.pooled();  // a block's mean need not be whole
  const detail::Matrix& shown = pooled.m;
  const double cell = cell_size(shown.rows, shown.cols, 480, 40);
  Labels labels = make_labels(opt, full, pooled, cell);

  const double x0 = MARGIN + (opt.ylabel.empty() ? 0 : 22) + labels.row_width + 6;
  const double y0 = MARGIN + (opt.title.empty() ? 0 : 26);
  const double width = static_cast<double>(shown.cols) * cell, height = static_cast<double>(shown.rows) * cell;

  std::string body = matrix_markup(shown, labels, scale, opt.masked_below, x0, y0, cell, true, true);
  double bar_width = 0;
  body += detail::svg_colorbar(scale, x0 + width + 20, y0, height, bar_width);
  if (!opt.ylabel.empty())  // upright along the rows, cut to their height
    body += detail::svg_text(MARGIN + 14, y0 + height / 2, detail::fit_text(opt.ylabel, height, 12),
                             {.rotate = -90, .cls = "ylabel"});
  double y = y0 + height + labels.col_height;
  double xlabel_right = 0;  // a label wider than the matrix reaches right of it: the picture widens
  if (!opt.xlabel.empty()) {
    y += 18;
    const std::string xlabel = detail::fit_text(opt.xlabel, 2 * (x0 + width / 2 - MARGIN), 12);  // not past the left
    body += detail::svg_text(x0 + width / 2, y, xlabel, {.cls = "xlabel"});
    xlabel_right = x0 + width / 2 + detail::text_extent(xlabel, 12) / 2 + MARGIN;
  }
  y = std::max(y, y0 + detail::colorbar_height(height));  // below a bar taller than the matrix
  std::vector<std::string> lines = notes(scale, opt, pooled.pooled() ? detail::pool_note(full, pooled) : "");
  double widest_note = notes_markup(body, lines, y);
  y += lines.empty() ? 0 : 4 + 16 * static_cast<double>(lines.size());

  const double body_width = std::max({x0 + width + 20 + bar_width + MARGIN, widest_note + 2 * MARGIN, xlabel_right});
  return picture(opt.title, body, body_width, y + MARGIN);
}

// The picture of heatmap_grid_svg and save_heatmap_grid_svg.
std::string grid_picture(const Tensor& m, const GridOptions& opt, const char* op) {
  if (!m.defined()) fail("{}: undefined tensor", op);
  if (m.dim() != 4) fail("{}: expected a 4-D tensor (rows, cols, H, W), got shape {}", op, m.shape());
  if (m.numel() == 0) fail("{}: empty tensor of shape {}", op, m.shape());
  const int64_t R = m.size(0), C = m.size(1), H = m.size(2), W = m.size(3);
  detail::check_labels(opt.row_titles, R, "row_titles", op, m.shape());
  detail::check_labels(opt.col_titles, C, "col_titles", op, m.shape());
  detail::check_labels(opt.cell.row_labels, H, "cell.row_labels", op, m.shape());
  detail::check_labels(opt.cell.col_labels, W, "cell.col_labels", op, m.shape());
  const std::vector<float> values = m.to_vector();
  detail::Scale scale = detail::make_scale(values, opt.cell, op);  // one scale shared by every subplot

  // Each subplot, pooled as needed: (H, W) -> (Hp, Wp)
  std::vector<detail::Pooled> subplots;
  detail::Matrix first;
  for (int64_t k = 0; k < R * C; ++k) {
    auto begin = values.begin() + k * H * W;
    detail::Matrix one{H, W, std::vector<float>(begin, begin + H * W)};
    subplots.push_back(detail::pool(one, SVG_MAX_CELLS / 2, SVG_MAX_CELLS / 2, opt.cell.masked_below));
    if (k == 0) first = one;
  }
  scale.whole = scale.whole && !subplots[0].pooled();  // a block's mean need not be whole
  const detail::Matrix& shape = subplots[0].m;
  // Subplots up to 160 px a side, or more when there are only a few of them (up to 480 px in all).
  const double cell =
      cell_size(shape.rows, shape.cols, std::max(160.0, 480.0 / static_cast<double>(std::max(R, C))), 24);
  Labels labels = make_labels(opt.cell, first, subplots[0], cell);
  const double pw = static_cast<double>(shape.cols) * cell, ph = static_cast<double>(shape.rows) * cell;
  const double grid_width = static_cast<double>(C) * pw + static_cast<double>(C - 1) * GAP;
  const double grid_height = static_cast<double>(R) * ph + static_cast<double>(R - 1) * GAP;

  // The titles never reach a neighbour's. A column title is wrapped to lines
  // as wide as its panel. Row titles are upright beside their row when each
  // fits the panel's height; otherwise level, in lines no taller than a
  // panel and the gap after it. The cell's ylabel is upright beside each row
  // when it fits a panel's height, else once along the whole grid.
  constexpr double LINE = 15;  // px from one line of a title to the next
  std::vector<std::vector<std::string>> col_lines;
  size_t col_depth = 0;  // lines of the tallest column title
  for (const std::string& t : opt.col_titles) {
    col_lines.push_back(detail::wrap_text(t, pw + GAP - 8, 12));
    col_depth = std::max(col_depth, col_lines.back().size());
  }
  const bool rows_upright = std::all_of(opt.row_titles.begin(), opt.row_titles.end(),
                                        [&](const std::string& t) { return detail::text_extent(t, 12) <= ph; });
  std::vector<std::vector<std::string>> row_lines;
  double row_title_width = opt.row_titles.empty() ? 0 : 22;
  if (!rows_upright) {
    const auto max_lines = static_cast<size_t>(std::max(1.0, std::floor((ph + GAP / 2) / LINE)));
    row_title_width = 0;
    for (const std::string& t : opt.row_titles) {
      row_lines.push_back(detail::wrap_text(t, ROW_TITLE_WIDTH, 12, max_lines));
      for (const std::string& line : row_lines.back())
        row_title_width = std::max(row_title_width, detail::text_extent(line, 12) + 10);
    }
  }
  const bool ylabel_per_row = detail::text_extent(opt.cell.ylabel, 12) <= ph;

  const double x0 = MARGIN + row_title_width + (opt.cell.ylabel.empty() ? 0 : 22) + labels.row_width + 6;
  const double y0 =
      MARGIN + (opt.title.empty() ? 0 : 26) + (col_depth > 0 ? 16 * static_cast<double>(col_depth) + 4 : 0);

  std::string body;
  for (int64_t i = 0; i < R; ++i) {
    for (int64_t j = 0; j < C; ++j) {
      double x = x0 + static_cast<double>(j) * (pw + GAP), y = y0 + static_cast<double>(i) * (ph + GAP);
      body += "<g class=\"subplot\">\n";
      body += matrix_markup(subplots[static_cast<size_t>(i * C + j)].m, labels, scale, opt.cell.masked_below, x, y,
                            cell, /*row_labels=*/j == 0, /*col_labels=*/i == R - 1);
      body += "</g>\n";
      if (i == 0 && !opt.col_titles.empty()) {  // bottom-aligned over the panel
        const std::vector<std::string>& lines = col_lines[static_cast<size_t>(j)];
        for (size_t k = 0; k < lines.size(); ++k)
          body += detail::svg_text(x + pw / 2, y0 - 8 - 16 * static_cast<double>(lines.size() - 1 - k), lines[k],
                                   {.cls = "col-title"});
      }
      if (j == 0 && !opt.cell.ylabel.empty() && ylabel_per_row)
        body +=
            detail::svg_text(x0 - labels.row_width - 12, y + ph / 2, opt.cell.ylabel, {.rotate = -90, .cls = "ylabel"});
      if (j == 0 && !opt.row_titles.empty()) {
        if (rows_upright) {
          body += detail::svg_text(MARGIN + 14, y + ph / 2, opt.row_titles[static_cast<size_t>(i)],
                                   {.rotate = -90, .cls = "row-title"});
        } else {  // level, the block of lines centred on the row
          const std::vector<std::string>& lines = row_lines[static_cast<size_t>(i)];
          const double top = y + ph / 2 - LINE * static_cast<double>(lines.size()) / 2;
          for (size_t k = 0; k < lines.size(); ++k)
            body += detail::svg_text(MARGIN, top + LINE * static_cast<double>(k) + 11, lines[k],
                                     {.anchor = "start", .cls = "row-title"});
        }
      }
      if (i == R - 1 && !opt.cell.xlabel.empty())
        body += detail::svg_text(x + pw / 2, y + ph + labels.col_height + 18,
                                 detail::fit_text(opt.cell.xlabel, pw + GAP - 8, 12), {.cls = "xlabel"});
    }
  }
  if (!opt.cell.ylabel.empty() && !ylabel_per_row)
    body += detail::svg_text(x0 - labels.row_width - 12, y0 + grid_height / 2,
                             detail::fit_text(opt.cell.ylabel, grid_height, 12), {.rotate = -90, .cls = "ylabel"});
  double bar_width = 0;
  body += detail::svg_colorbar(scale, x0 + grid_width + 20, y0, grid_height, bar_width);

  double y = y0 + grid_height + labels.col_height + (opt.cell.xlabel.empty() ? 0 : 18);
  y = std::max(y, y0 + detail::colorbar_height(grid_height));
  std::vector<std::string> lines = notes(
      scale, opt.cell, subplots[0].pooled() ? detail::pool_note(first, subplots[0]) + " in each subplot" : "", R * C);
  double widest_note = notes_markup(body, lines, y);
  y += lines.empty() ? 0 : 4 + 16 * static_cast<double>(lines.size());

  const double body_width = std::max(x0 + grid_width + 20 + bar_width + MARGIN, widest_note + 2 * MARGIN);
  return picture(opt.title, body, body_width, y + MARGIN);
}

}  // namespace

std::string heatmap_svg(const Tensor& m, const HeatmapOptions& opt) { return heatmap_picture(m, opt, "heatmap_svg"); }

void save_heatmap_svg(const std::filesystem::path& file, const Tensor& m, const HeatmapOptions& opt) {
  const char* op = "save_heatmap_svg";
  detail::write_file(file, heatmap_picture(m, opt, op), op);
}

std::string heatmap_grid_svg(const Tensor& m, const GridOptions& opt) {
  return grid_picture(m, opt, "heatmap_grid_svg");
}

void save_heatmap_grid_svg(const std::filesystem::path& file, const Tensor& m, const GridOptions& opt) {
  const char* op = "save_heatmap_grid_svg";
  detail::write_file(file, grid_picture(m, opt, op), op);
}

}  // namespace qkv::viz
