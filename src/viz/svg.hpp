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

// Text cut into lines at spaces, each at most `width` px wide at `size`; a
// word wider than that is cut with "…". At most `max_lines` lines: the last
// one kept ends in "…" when text was left out.
std::vector<std::string> wrap_text(const std::string& s, double width, double size, size_t max_lines = 1000);
// The one line of wrap_text(s, width, size, 1), or "" for a text of spaces.
std::string fit_text(const std::string& s, double width, double size);

// The colour bar's values, from hi down to lo: both ends, and between them
// round values (nice_ticks, about one per 40 px), none nearer than TICK_GAP
// px to another, so that no two labels crowd. A bar is never shorter than
// colorbar_height(height), which leaves room for the two ends' labels.
constexpr double TICK_GAP = 22;
double colorbar_height(double height);
std::vector<double> colorbar_ticks(double lo, double hi, double height);

// A vertical colour bar with its values, top = hi, colorbar_height(height)
// tall, inside <g class="colorbar">; returns the markup and sets `width` to
// how much room it takes right of x. A scale of whole numbers (Scale::whole)
// is one box a number, each labelled at its middle where the labels keep
// WHOLE_GAP px apart (one label's height and a little).
constexpr double WHOLE_GAP = 14;
std::string svg_colorbar(const Scale& scale, double x, double y, double height, double& width);

}  // namespace qkv::viz::detail
