// What the terminal and SVG pictures share: reading a tensor as a matrix,
// the colour scale and what falls outside it, block-mean pooling, labels,
// number formatting, and writing a file. Internal to src/viz.
#pragma once
#include <qkv/core/tensor.hpp>
#include <qkv/viz/heatmap.hpp>
#include <qkv/viz/plot.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace qkv::viz::detail {

// A 2-D block of numbers, row-major.
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;
  float at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
};

// m as a matrix; an Error naming `op` and the shape unless m is 2-D and non-empty.
Matrix read_matrix(const Tensor& m, const char* op);

// What an entry is: a value on the colour scale, or one drawn apart.
enum class Kind { Value, Masked, NaN, Inf };
Kind kind_of(float v, float masked_below);  // NaN/±Inf first, then <= masked_below

// The colour scale: values in [lo, hi] map to t in [0, 1] (clamped outside).
struct Scale {
  bool empty = false;     // no finite, unmasked entry to scale by (and no limits given)
  bool constant = false;  // limits from the data, and every scaled entry equal
  // Limits from the data, every scaled entry a whole number, and at most
  // WHOLE_LEVELS of them from lo to hi (steps, counts, classes): the colour
  // bar is then one box a number, as the cells are coloured.
  bool whole = false;
  float lo = 0, hi = 1;
  int64_t masked = 0, nonfinite = 0;  // entries left out of the scale
  float t(float v) const;             // 0.5 for a constant matrix
};
constexpr int WHOLE_LEVELS = 12;
// The scale over `values` with opt's limits; vmin >= vmax is an Error naming `op`.
Scale make_scale(const std::vector<float>& values, const HeatmapOptions& opt, const char* op);

// m shrunk to at most max_rows x max_cols by the means of blocks of
// block_rows x block_cols entries. A block's mean is over its scaled
// entries; a block holding a NaN/Inf is NaN/Inf, one with only masked
// entries is masked.
struct Pooled {
  Matrix m;
  int64_t block_rows = 1, block_cols = 1;
  bool pooled() const { return block_rows > 1 || block_cols > 1; }
};
Pooled pool(const Matrix& m, int64_t max_rows, int64_t max_cols, float masked_below);

// "mean over 4x4 blocks: 200 x 256 -> 50 x 64"
std::string pool_note(const Matrix& original, const Pooled& p);
std::string constant_note(float value);               // "constant: every entry is 0.25"
std::string masked_note(int64_t count, float below);  // "6 masked entries (<= -1e5)"
std::string nonfinite_note(int64_t count);            // "2 entries are NaN/Inf"

// Labels must be none or one per row/column: an Error naming `op`, both counts and the shape.
void check_labels(const std::vector<std::string>& labels, int64_t n, const char* what, const char* op,
                  const Shape& shape);
// labels, or "0", "1", … when none are given; the label of every `step`-th
// entry (the first of each pooled block).
std::vector<std::string> axis_labels(const std::vector<std::string>& given, int64_t n, int64_t step = 1);

// --- line plots ---------------------------------------------------------------

// The x of a series: its own, or 0, 1, 2, … when it gives none.
std::vector<float> x_of(const Series& s);
// The box every finite point of every series lies in; an Error naming `op`
// for no series, a series with no points or with x and y of different
// lengths, or no finite point at all. A flat range is widened so that it
// has a middle: [v - |v|/2, v + |v|/2], or [-1, 1] around 0.
struct PlotRange {
  double xmin, xmax, ymin, ymax;
};
PlotRange plot_range(const std::vector<Series>& series, const char* op);
// matplotlib's "tab10" colours, one per series (they repeat after 10).
Rgb series_color(size_t i);

// A number as a reader wants it on an axis: 3 significant digits, "1e5" not "1e+05".
std::string num(double v);

// UTF-8 text split into code points (tokens may be French words); each is
// taken to be one terminal column wide.
std::vector<std::string> code_points(const std::string& s);
int64_t text_width(const std::string& s);
std::string truncate(const std::string& s, int64_t width);  // "attention" -> "attenti…" at width 8

// Write `contents` to `file`, creating missing folders; an Error naming `op` and the path.
void write_file(const std::filesystem::path& file, const std::string& contents, const char* op);

}  // namespace qkv::viz::detail
