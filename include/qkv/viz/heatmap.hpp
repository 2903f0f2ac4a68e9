// Heatmaps of 2-D tensors (attention weights, scores, embeddings), in the
// terminal and as SVG files, and d2l's show_heatmaps grid of them.
//
// Values map to viridis between vmin and vmax. Three kinds of entry stay
// out of the colour scale and are drawn apart, each counted in a note:
//   masked scores  entries <= masked_below (d2l masks scores with -1e6),
//   NaN and ±Inf   a marked cell ('?' NaN, '!' Inf in text; a crossed cell in SVG).
// A matrix whose scaled entries are all equal is drawn in one colour and
// the picture says so ("constant: every entry is 0.25").
//
// The terminal heatmap shows a matrix larger than TextOptions' max_rows x
// max_cols as the means of blocks of entries, and says so. Bad input (a
// tensor that is not 2-D, or 4-D for the grid; empty; label counts that do
// not match) is a qkv::Error naming the shapes.
#pragma once
#include <qkv/core/tensor.hpp>
#include <qkv/viz/color.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace qkv::viz {

// (Every field has an initialiser, {} included, so that designated
// initialisers such as {.title = "attention"} may leave the others out.)
struct HeatmapOptions {
  std::string title{};
  std::string xlabel{}, ylabel{};                       // e.g. "keys", "queries"
  std::vector<std::string> row_labels{}, col_labels{};  // tokens on the axes; empty = indices 0, 1, …
  // Colour-scale limits; NaN = min/max of the finite, unmasked entries. Pictures
  // meant to be compared by colour should share both (the SVG notes a fixed scale).
  float vmin = NAN, vmax = NAN;
  float masked_below = -1e5f;  // entries <= this are masked scores (d2l masks with -1e6)
};

// A 2-D tensor as a heatmap for the terminal; returns the text (the caller prints it).
std::string heatmap_text(const Tensor& m, const HeatmapOptions& opt = {}, const TextOptions& text = {});

// A 2-D tensor as a self-contained SVG file (title, axis labels, tick/token
// labels, colour bar). Missing folders are created.
void save_heatmap_svg(const std::filesystem::path& file, const Tensor& m, const HeatmapOptions& opt = {});
// The same picture as SVG text, for a caller that keeps it in memory (a web page).
std::string heatmap_svg(const Tensor& m, const HeatmapOptions& opt = {});

// d2l's show_heatmaps: m is (rows, cols, H, W), one subplot per (r, c), one
// colour scale shared by every subplot (a note under the grid says so). A
// column title too wide for its subplot is wrapped; row titles stand upright
// beside their row when they fit its height, else level, wrapped: titles
// never overlap each other or leave the picture.
struct GridOptions {
  std::string title{};
  std::vector<std::string> row_titles{}, col_titles{};  // e.g. "block 0", "head 1"
  HeatmapOptions cell{};                                // axis labels, tokens, limits shared by every subplot
};
void save_heatmap_grid_svg(const std::filesystem::path& file, const Tensor& m, const GridOptions& opt = {});
std::string heatmap_grid_svg(const Tensor& m, const GridOptions& opt = {});  // the same, as SVG text

}  // namespace qkv::viz
