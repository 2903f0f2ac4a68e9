// Colour for qkv::viz: the viridis colour map, and when the terminal
// pictures may use ANSI colour at all.
//
// Viridis (matplotlib's default map) is perceptually uniform: equal steps in
// value look like equal steps in colour, and it stays readable in grey and
// for the colour-blind. qkv keeps matplotlib's 256 colours, rounded to 8 bits.
#pragma once
#include <cstdint>
#include <string>

namespace qkv::viz {

// Auto: colour only if stdout is a terminal (isatty) and NO_COLOR is unset or
// empty (https://no-color.org). Never: plain characters, no escape codes.
enum class Color { Auto, Always, Never };

// The terminal renderings: matrices larger than max_rows x max_cols are
// shown pooled (block means), so that they fit.
struct TextOptions {
  int max_rows = 32;
  int max_cols = 64;
  Color color = Color::Auto;
};

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

// viridis(0) = #440154 (dark purple) … viridis(1) = #fde725 (yellow);
// t is clamped to [0, 1] and picks the nearest of the 256 colours.
Rgb viridis(float t);

// "#rrggbb", as SVG and HTML write colours.
std::string to_hex(Rgb c);

// Whether a terminal rendering with this setting uses ANSI colour now.
bool use_color(Color color);

}  // namespace qkv::viz
