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

std::vector<std::string> wrap_text(const std::string& s, double width, double size, size_t max_lines) {
  const auto fits = [&](const std::string& t) { return text_extent(t, size) <= width; };
  // The longest cut of t, ending in "…", that fits (one character and "…" at least).
  const auto cut = [&](const std::string& t) {
    int64_t n = text_width(t);
    while (n > 2 && !fits(truncate(t, n))) --n;
    return truncate(t, n);
  };
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = std::min(s.find(' ', start), s.size());
    std::string word = s.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && fits(line + " " + word)) {
      line += " " + word;
      continue;
    }
    if (!line.empty()) lines.push_back(line);
    line = fits(word) ? word : cut(word);
  }
  if (!line.empty()) lines.push_back(line);
  if (lines.size() > max_lines) {
    lines.resize(max_lines);
    lines.back() = cut(lines.back() + " …");  // "…" ends the last line kept: something was left out
  }
  return lines;
}

std::string fit_text(const std::string& s, double width, double size) {
  std::vector<std::string> lines = wrap_text(s, width, size, 1);
  return lines.empty() ? "" : lines[0];
}

double colorbar_height(double height) { return std::max(height, 2 * TICK_GAP + 4); }

std::vector<double> colorbar_ticks(double lo, double hi, double height) {
  height = colorbar_height(height);
  auto below_top = [&](double v) { return height * (hi - v) / (hi - lo); };  // in px
  std::vector<double> ticks = {hi};
  // The round values, top down, each kept if far enough below the last one kept and above lo.
  std::vector<double> round = nice_ticks(lo, hi, std::max(1, static_cast<int>(height / 40)));
  std::reverse(round.begin(), round.end());
  for (double v : round)
    if (below_top(v) - below_top(ticks.back()) >= TICK_GAP && below_top(lo) - below_top(v) >= TICK_GAP)
      ticks.push_back(v);
  ticks.push_back(lo);
  return ticks;
}

std::string svg_colorbar(const Scale& scale, double x, double y, double height, double& width) {
  height = colorbar_height(height);
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
  } else if (scale.whole) {  // one box a whole number, hi at the top, each the colour of its cells
    const int levels = static_cast<int>(scale.hi - scale.lo) + 1;
    const double box = height / levels;
    // Labels from lo up, every `step` boxes, so that no two are nearer than
    // a label's height; hi too where it keeps that distance.
    const int step = static_cast<int>(std::ceil(WHOLE_GAP / box));
    for (int i = 0; i < levels; ++i) {
      const float value = scale.hi - static_cast<float>(i);
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x,
                         y + i * box, BAR, box, to_hex(viridis(scale.t(value))));
    }
    out +=
        fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"none\" stroke=\"black\"/>\n",
                    x, y, BAR, height);
    std::vector<int> labelled;  // boxes counted from lo
    for (int k = 0; k < levels; k += step) labelled.push_back(k);
    if ((levels - 1 - labelled.back()) * box >= WHOLE_GAP) labelled.push_back(levels - 1);
    std::reverse(labelled.begin(), labelled.end());  // top down, as the gradient's
    for (int k : labelled) tick(y + height - (k + 0.5) * box, scale.lo + static_cast<float>(k));
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
    auto at = [&](double v) { return y + height * (scale.hi - v) / (static_cast<double>(scale.hi) - scale.lo); };
    for (double v : colorbar_ticks(scale.lo, scale.hi, height)) tick(at(v), v);
  }
  return out + "</g>\n";
}

}  // namespace qkv::viz::detail
