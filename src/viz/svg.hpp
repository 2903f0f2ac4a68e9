// A few lines of SVG writing shared by the SVG pictures: the document,
// escaped text, and the viridis colour bar. Internal to src/viz.
//
// Every file is self-contained: no external fonts, stylesheets or scripts,
// only the generic "sans-serif" family, which every browser has.
#pragma once
#include <string>
#include <vector>

#include <qkv/viz/xml.hpp>

#include "viz/common.hpp"

namespace qkv::viz::detail {

std::string svg_begin(double width, double height);  // the root element and a white background
std::string svg_end();

// A <text> element at (x, y) (y is the baseline); anchor "start", "middle" or "end";
// rotate in degrees about (x, y), negative turns the text upwards.
struct TextStyle {
  const char* anchor = "middle";
  double size = 12;
  double rotate = 0;
  const char* cls = "";  // a class attribute, so tests and stylesheets can find the element
};
std::string svg_text(double x, double y, const std::string& s, const TextStyle& style = {});

// About how wide a text is at a font size (sans-serif averages ~0.6 em per character).
double text_extent(const std::string& s, double size = 12);

// Tick values as people choose them: the multiples within [lo, hi] of a step
// of 1, 2 or 5 times a power of ten that cuts the range into about `parts`.
std::vector<double> nice_ticks(double lo, double hi, int parts);

// A vertical colour bar with its values, top = hi, inside <g class="colorbar">;
// returns the markup and sets `width` to how much room it takes right of x.
std::string svg_colorbar(const Scale& scale, double x, double y, double height, double& width);

}  // namespace qkv::viz::detail
