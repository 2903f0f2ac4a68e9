// Tests for src/viz/plot_text.cpp and plot_svg.cpp: line plots. The terminal
// plots are written by hand from plot_text.cpp's rules: a point goes to the
// nearest cell (row 0 at the top), a line through the nearest cell at each
// step along its longer side.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "viz/viz_test_util.hpp"

using namespace qkv;
using namespace qkv::viz;

namespace {
const TextOptions PLAIN{.color = Color::Never};
const float NaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("viz/line_plot_text plain") {
  SUBCASE("a curve and a point") {
    // y = x² at x = 0, 1, 2 on 5 x 5 cells: x -> column 2x, y -> row 4 - y, so the
    // points are (col 0, row 4), (2, 3), (4, 0). From (0, 4) to (2, 3): 2 steps,
    // through (1, 4 - 1/2 rounded up = 4). From (2, 3) to (4, 0): 3 steps,
    // through (2 + 2/3 -> 3, 3 - 1 = 2) and (2 + 4/3 -> 3, 3 - 2 = 1).
    // The point (1, 2) of the second series is at (2, 2), marked '+'.
    std::vector<Series> series{{.name = "x^2", .x = {0, 1, 2}, .y = {0, 1, 4}},
                               {.name = "mid", .x = {1}, .y = {2}, .points = true}};
    PlotOptions opt{.title = "T", .xlabel = "x", .ylabel = "y", .width = 5, .height = 5};
    CHECK(line_plot_text(series, opt, PLAIN) ==
          "T\n"
          "y\n"
          "4 +    *\n"
          "  |   *\n"
          "2 +  +*\n"
          "  |  *\n"
          "0 +**\n"
          "  +-----\n"
          "   0 1 2\n"
          "     x\n"
          "* x^2   + mid\n");
  }
  SUBCASE("a NaN breaks the line; x defaults to 0, 1, 2") {
    // Points (0, 0) and (2, 2) on 3 x 3 cells: (col 0, row 2) and (col 2, row 0), no line between.
    // The middle x tick (1, at column 1) does not fit between "0" and "2".
    std::vector<Series> series{{.name = "s", .y = {0, NaN, 2}}};
    CHECK(line_plot_text(series, {.width = 3, .height = 3}, PLAIN) ==
          "2 +  *\n"
          "1 +\n"
          "0 +*\n"
          "  +---\n"
          "   0 2\n"
          "* s\n");
  }
  SUBCASE("a flat line gets a range around it") {
    // y = 3 everywhere: the range is widened to [3 - 1.5, 3 + 1.5]; the line is on the middle row.
    std::vector<Series> series{{.name = "lr", .y = {3, 3, 3}}};
    CHECK(line_plot_text(series, {.width = 3, .height = 3}, PLAIN) ==
          "4.5 +\n"
          "  3 +***\n"
          "1.5 +\n"
          "    +---\n"
          "     0 2\n"
          "* lr\n");
  }
}

TEST_CASE("viz/line_plot_text colour") {
  // Two series: braille cells in tab10's first two colours, (31, 119, 180) and (255, 127, 14).
  std::vector<Series> series{{.name = "train", .y = {3, 2, 1}}, {.name = "valid", .y = {3, 2.5f, 2}}};
  std::string text = line_plot_text(series, {}, {.color = Color::Always});
  CHECK(text.find("\x1b[38;2;31;119;180m") != std::string::npos);
  CHECK(text.find("\x1b[38;2;255;127;14m") != std::string::npos);
  CHECK(text.find("\xe2\xa0") != std::string::npos);  // UTF-8 of U+2800 … U+283F: braille
  CHECK(text.find("\x1b[38;2;31;119;180m━\x1b[0m train   \x1b[38;2;255;127;14m━\x1b[0m valid\n") != std::string::npos);
  std::string plain = line_plot_text(series, {}, PLAIN);
  CHECK(plain.find('\x1b') == std::string::npos);
  CHECK(plain.find("\xe2\xa0") == std::string::npos);
  CHECK(plain.find("* train   + valid\n") != std::string::npos);
}

TEST_CASE("viz/line plots: errors") {
  for (auto draw :
       {+[](const std::vector<Series>& s) { (void)line_plot_text(s); },
        +[](const std::vector<Series>& s) { save_line_plot_svg(test::TempDir("viz_plot_err") / "p.svg", s); }}) {
    CHECK_THROWS_WITH_AS(draw({}), doctest::Contains("no series to plot"), Error);
    CHECK_THROWS_WITH_AS(draw({{.name = "loss"}}), doctest::Contains("series 0 ('loss') has no points"), Error);
    CHECK_THROWS_WITH_AS(draw({{.name = "a", .y = {1}}, {.name = "b", .x = {1, 2, 3}, .y = {1, 2}}}),
                         doctest::Contains("series 1 ('b') has 3 x values and 2 y values"), Error);
    CHECK_THROWS_WITH_AS(draw({{.name = "a", .y = {NaN, NaN}}}), doctest::Contains("no point has a finite x and y"),
                         Error);
  }
  CHECK_THROWS_WITH_AS(line_plot_text({{.y = {1, 2}}}, {.width = 1}),
                       doctest::Contains("width and height must be at least 2"), Error);
}

TEST_CASE("viz/save_line_plot_svg") {
  test::TempDir dir("viz_plot");
  std::vector<Series> series{{.name = "train <loss>", .x = {1, 2, 3, 4}, .y = {2, 1, NaN, 0.5f}},
                             {.name = "valid & test", .x = {1, 4}, .y = {2.5f, 1}, .points = true}};
  save_line_plot_svg(dir / "plots/loss.svg", series, {.title = "loss", .xlabel = "epoch", .ylabel = "loss"});
  pugi::xml_document doc = test::load_svg(dir / "plots/loss.svg");

  CHECK(test::with_class(doc, "title").at(0).child_value() == std::string("loss"));
  CHECK(test::with_class(doc, "xlabel").at(0).child_value() == std::string("epoch"));
  CHECK(test::with_class(doc, "ylabel").at(0).child_value() == std::string("loss"));
  // The NaN splits the first series into two polylines (2 points, then 1); the second is 2 markers.
  auto lines = test::with_class(doc, "series");
  REQUIRE(lines.size() == 2);
  CHECK(std::string(lines[0].attribute("points").value()).find(' ') != std::string::npos);
  CHECK(std::string(lines[1].attribute("points").value()).find(' ') == std::string::npos);
  CHECK(std::string(lines[0].attribute("stroke").value()) == "#1f77b4");  // tab10's first colour
  auto points = test::with_class(doc, "point");
  REQUIRE(points.size() == 2);
  CHECK(std::string(points[0].attribute("fill").value()) == "#ff7f0e");  // tab10's second
  // x grows to the right, y upwards: (1, 2.5) is left of and above (4, 1).
  CHECK(points[0].attribute("cx").as_double() < points[1].attribute("cx").as_double());
  CHECK(points[0].attribute("cy").as_double() < points[1].attribute("cy").as_double());
  // Legend entries, escaped in the file and read back as written.
  auto entries = test::with_class(doc, "legend-entry");
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].child_value() == std::string("train <loss>"));
  CHECK(entries[1].child_value() == std::string("valid & test"));
  // Nice ticks on x over [1 - 0.15, 4 + 0.15]: a step of 0.5 (3.3 / 5 = 0.66 -> 0.5), 1 to 4.
  std::vector<std::string> ticks;
  for (pugi::xml_node t : test::with_class(doc, "tick")) ticks.push_back(t.child_value());
  for (const char* t : {"1", "1.5", "2", "2.5", "3", "3.5", "4"})
    CHECK(std::find(ticks.begin(), ticks.end(), t) != ticks.end());
}

namespace {

// The legend's box, and every line segment and point drawn, in px.
struct Drawn {
  double lx0, ly0, lx1, ly1;
  std::vector<std::array<double, 4>> segments;
  std::vector<std::array<double, 2>> points;
};
Drawn drawn(const pugi::xml_document& doc) {
  Drawn d{};
  pugi::xml_node box = test::with_class(doc, "legend").at(0).child("rect");
  d.lx0 = box.attribute("x").as_double();
  d.ly0 = box.attribute("y").as_double();
  d.lx1 = d.lx0 + box.attribute("width").as_double();
  d.ly1 = d.ly0 + box.attribute("height").as_double();
  for (pugi::xml_node line : test::with_class(doc, "series")) {
    std::istringstream in(line.attribute("points").value());
    std::vector<std::array<double, 2>> xy;
    double x = 0, y = 0;
    char comma = 0;
    while (in >> x >> comma >> y) xy.push_back({x, y});
    for (size_t i = 1; i < xy.size(); ++i) d.segments.push_back({xy[i - 1][0], xy[i - 1][1], xy[i][0], xy[i][1]});
  }
  for (pugi::xml_node p : test::with_class(doc, "point"))
    d.points.push_back({p.attribute("cx").as_double(), p.attribute("cy").as_double()});
  return d;
}

// Whether any line or point falls in the legend's box: each segment sampled every 0.25 px.
bool legend_covers_something(const Drawn& d) {
  auto inside = [&](double x, double y) { return x >= d.lx0 && x <= d.lx1 && y >= d.ly0 && y <= d.ly1; };
  for (const auto& [ax, ay, bx, by] : d.segments) {
    const int n = 1 + static_cast<int>(4 * std::hypot(bx - ax, by - ay));
    for (int k = 0; k <= n; ++k) {
      const double t = static_cast<double>(k) / n;
      if (inside(ax + t * (bx - ax), ay + t * (by - ay))) return true;
    }
  }
  for (const auto& [x, y] : d.points)
    if (inside(x, y)) return true;
  return false;
}

}  // namespace

TEST_CASE("viz/save_line_plot_svg: the legend covers no line") {
  test::TempDir dir("viz_legend");
  std::vector<float> epochs;
  for (int e = 1; e <= 15; ++e) epochs.push_back(static_cast<float>(e));
  auto curve = [&](auto f) {
    std::vector<float> y;
    for (float e : epochs) y.push_back(f(e));
    return y;
  };
  SUBCASE("accuracy rising into the upper right corner, loss falling") {
    // Lesson 12's picture: the upper right, matplotlib's first place, is taken by the accuracies.
    std::vector<Series> series = {
        {"attn + P: loss", epochs, curve([](float e) { return 0.7f * std::exp(-e / 3); })},
        {"attn + P: accuracy", epochs, curve([](float e) { return 1 - 0.5f * std::exp(-e / 2); })},
        {"average: loss", epochs, curve([](float e) { return 0.7f * std::exp(-e / 5); })},
        {"average: accuracy", epochs, curve([](float e) { return 1 - 0.5f * std::exp(-e / 4); })}};
    save_line_plot_svg(dir / "training.svg", series, {.title = "training", .xlabel = "epoch", .ylabel = "loss"});
    pugi::xml_document doc = test::load_svg(dir / "training.svg");
    Drawn d = drawn(doc);
    CHECK(d.segments.size() == 4 * 14);
    CHECK_FALSE(legend_covers_something(d));
    CHECK(doc.document_element().attribute("width").as_double() == 640);  // inside the frame
    test::check_text_layout(doc);
  }
  SUBCASE("lines everywhere: the legend goes right of the frame, and the picture widens") {
    std::vector<Series> series;
    for (int k = 0; k < 12; ++k)  // zigzags across the whole frame, each at its own height
      series.push_back({fmt::format("zigzag {}", k), epochs, curve([k](float e) {
                          return static_cast<float>(k) + (static_cast<int>(e) % 2 ? 3.0f : 0.0f);
                        })});
    save_line_plot_svg(dir / "busy.svg", series, {.title = "busy"});
    pugi::xml_document doc = test::load_svg(dir / "busy.svg");
    Drawn d = drawn(doc);
    CHECK_FALSE(legend_covers_something(d));
    pugi::xml_node frame = test::with_class(doc, "axes").at(0);
    CHECK(d.lx0 > frame.attribute("x").as_double() + frame.attribute("width").as_double());
    CHECK(doc.document_element().attribute("width").as_double() >= d.lx1);
    test::check_text_layout(doc);
  }
}

// line_plot_svg is save_line_plot_svg's picture, kept in memory.
TEST_CASE("viz/line_plot_svg returns the text save_line_plot_svg writes") {
  test::TempDir dir("viz_plot_text_svg");
  std::vector<Series> series = {{"loss", {}, {3, 2, 1.5f}}, {"points", {0, 2}, {1, 2}, /*points=*/true}};
  PlotOptions opt{.title = "loss", .xlabel = "epoch", .ylabel = "value"};
  save_line_plot_svg(dir / "p.svg", series, opt);
  CHECK(line_plot_svg(series, opt) == test::read_bytes(dir / "p.svg"));
}
