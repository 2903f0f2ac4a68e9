// Line plots (loss curves, learning-rate schedules, positional encodings),
// in the terminal and as SVG files.
//
// Every series is drawn against shared axes. The terminal plot uses braille
// dots, one colour per series, when colour is on, and one marker character
// per series ('*', '+', 'o', …) when it is off. Points with a NaN or ±Inf
// coordinate are left out (a line breaks there). A series with no points,
// or with x and y of different lengths, is a qkv::Error.
#pragma once
#include <qkv/viz/color.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace qkv::viz {

// x may be left empty: the points are then at x = 0, 1, 2, …
struct Series {
  std::string name{};
  std::vector<float> x{}, y{};
  bool points = false;  // markers, no line
};

// width and height in terminal cells, each at least 2 (and width·height at
// most 2^20 for line_plot_text, which holds every cell); the SVG is 10 x 25
// pixels per cell (640 x 400 by default).
struct PlotOptions {
  std::string title{}, xlabel{}, ylabel{};
  int width = 64, height = 16;
};

std::string line_plot_text(const std::vector<Series>& series, const PlotOptions& opt = {},
                           const TextOptions& text = {});
void save_line_plot_svg(const std::filesystem::path& file, const std::vector<Series>& series,
                        const PlotOptions& opt = {});
std::string line_plot_svg(const std::vector<Series>& series, const PlotOptions& opt = {});  // the same, as SVG text

}  // namespace qkv::viz
