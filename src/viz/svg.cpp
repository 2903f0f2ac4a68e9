// SVG writing shared by the SVG pictures: see svg.hpp.
#include "viz/svg.hpp"

#include <qkv/viz/color.hpp>

#include <algorithm>
#include <cmath>

namespace qkv::viz::detail {

std::string svg_begin(double width, double height) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
}

std::string svg_end() { return "</svg>\n"; }

std::string svg_text(double x, double y, const std::string& s, const TextStyle& style) {
  std::string rotate =
      style.rotate != 0 ? fmt::format(" transform=\"rotate({:g} {:.1f} {:.1f})\"", style.rotate, x, y) : "";
  std::string cls = style.cls[0] != '\0' ? fmt::format(" class=\"{}\"", style.cls) : "";
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{:g}\" text-anchor=\"{}\"{}{}>{}</text>\n", x, y,
                     style.size, style.anchor, rotate, cls, xml_escape(s));
}

double text_extent(const std::string& s, double size) { return 0.6 * size * static_cast<double>(text_width(s)); }

std::vector<double> nice_ticks(double lo, double hi, int parts) {
  double raw = (hi - lo) / parts;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / magnitude;  // in [1, 10)
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  std::vector<double> ticks;
  for (double k = std::ceil(lo / step); k * step <= hi + step * 1e-9; ++k) ticks.push_back(k * step);
  return ticks;
}

std::string svg_colorbar(const Scale& scale, double x, double y, double height, double& width) {
  constexpr double BAR = 16, TICK = 4;
  std::string out = "<g class=\"colorbar\">\n";
  width = BAR;
  auto tick = [&](double ty, double value) {
    std::string label = num(value);
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n", x + BAR,
                       ty, x + BAR + TICK, ty);
    out += svg_text(x + BAR + TICK + 2, ty + 4, label, {.anchor = "start", .size = 11, .cls = "tick"});
    width = std::max(width, BAR + TICK + 2 + text_extent(label, 11));
  };
  if (scale.empty) {  // nothing to scale: an empty frame
    out +=
        fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"none\" stroke=\"gray\"/>\n",
                    x, y, BAR, height);
  } else if (scale.constant) {  // one colour, one value
    out +=
        fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\" stroke=\"black\"/>\n",
                    x, y, BAR, height, to_hex(viridis(0.5f)));
    tick(y + height / 2, scale.lo);
  } else {
    // A gradient from viridis(1) at the top to viridis(0) at the bottom, 17 stops
    // (viridis is smooth enough that linear interpolation between them is exact to the eye).
    out += "<defs><linearGradient id=\"viridis\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
    for (int k = 0; k <= 16; ++k)
      out += fmt::format("<stop offset=\"{:g}\" stop-color=\"{}\"/>\n", k / 16.0,
                         to_hex(viridis(static_cast<float>(k) / 16)));
    out += "</linearGradient></defs>\n";
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"url(#viridis)\" stroke=\"black\"/>\n", x,
        y, BAR, height);
    // The two ends, and round values between them (one per ~40 px) not crowding the ends.
    auto at = [&](double v) { return y + height * (scale.hi - v) / (static_cast<double>(scale.hi) - scale.lo); };
    tick(at(scale.lo), scale.lo);
    for (double v : nice_ticks(scale.lo, scale.hi, std::max(1, static_cast<int>(height / 40))))
      if (at(v) < at(scale.lo) - 14 && at(v) > at(scale.hi) + 14) tick(at(v), v);
    tick(at(scale.hi), scale.hi);
  }
  return out + "</g>\n";
}

}  // namespace qkv::viz::detail
