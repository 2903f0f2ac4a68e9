// Tests for src/viz/heatmap_svg.cpp: heatmaps and grids of heatmaps as SVG.
// Every file is parsed back with pugixml; colours are checked against
// matplotlib's viridis (#440154 at 0, #fde725 at 1, #21918c at 0.5),
// positions against the layout (column to the right, row downwards).
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "viz/svg.hpp"  // colorbar_ticks, TICK_GAP
#include "viz/viz_test_util.hpp"

using namespace qkv;
using namespace qkv::viz;

namespace {

const float NaN = std::numeric_limits<float>::quiet_NaN();

// The cells of a heatmap by their tooltip ("row, col: value").
std::map<std::string, pugi::xml_node> cells_by_title(const pugi::xml_document& doc) {
  std::map<std::string, pugi::xml_node> out;
  for (pugi::xml_node cell : test::with_class(doc, "cell")) out[cell.child_value("title")] = cell;
  return out;
}

double attr(pugi::xml_node n, const char* name) { return n.attribute(name).as_double(); }

std::string note_containing(const pugi::xml_document& doc, const std::string& part) {
  for (pugi::xml_node n : test::with_class(doc, "note"))
    if (std::string(n.child_value()).find(part) != std::string::npos) return n.child_value();
  return "";
}

// The ticks of a colour bar, top down.
std::vector<std::string> colorbar_labels(const pugi::xml_document& doc) {
  auto bars = test::with_class(doc, "colorbar");
  REQUIRE(bars.size() == 1);
  std::vector<std::string> ticks;
  for (pugi::xml_node t : bars[0].children("text")) ticks.push_back(t.child_value());
  return ticks;
}

}  // namespace

TEST_CASE("viz/save_heatmap_svg colours, positions and labels") {
  test::TempDir dir("viz_heatmap");
  Tensor m = tensor({0, 1, 2, 3}, {2, 2});
  HeatmapOptions opt{.title = "attention & <weights>",
                     .xlabel = "keys",
                     .ylabel = "queries",
                     .row_labels = {"je", "\"suis\""},
                     .col_labels = {"<eos>", "a&b"}};
  save_heatmap_svg(dir / "m.svg", m, opt);
  pugi::xml_document doc = test::load_svg(dir / "m.svg");

  auto cells = cells_by_title(doc);
  REQUIRE(cells.size() == 4);
  pugi::xml_node c00 = cells.at("je, <eos>: 0"), c01 = cells.at("je, a&b: 1");
  pugi::xml_node c10 = cells.at("\"suis\", <eos>: 2"), c11 = cells.at("\"suis\", a&b: 3");
  CHECK(std::string(c00.attribute("fill").value()) == "#440154");  // the minimum: viridis(0)
  CHECK(std::string(c11.attribute("fill").value()) == "#fde725");  // the maximum: viridis(1)
  // 1 and 2 are a third and two thirds of the way: entries 85 and 170 of
  // matplotlib's 256-colour viridis (matplotlib.cm.viridis(85) and (170)).
  CHECK(std::string(c01.attribute("fill").value()) == "#31688e");
  CHECK(std::string(c10.attribute("fill").value()) == "#35b779");
  CHECK(attr(c01, "x") > attr(c00, "x"));  // columns go right
  CHECK(attr(c01, "y") == attr(c00, "y"));
  CHECK(attr(c10, "y") > attr(c00, "y"));  // rows go down
  CHECK(attr(c10, "x") == attr(c00, "x"));
  CHECK(attr(c00, "width") == attr(c00, "height"));  // square cells

  // Text: title, axis labels and tokens, escaped in the file and read back as written.
  CHECK(test::with_class(doc, "title").at(0).child_value() == std::string("attention & <weights>"));
  CHECK(test::with_class(doc, "xlabel").at(0).child_value() == std::string("keys"));
  CHECK(test::with_class(doc, "ylabel").at(0).child_value() == std::string("queries"));
  CHECK(test::has_text(doc, "je"));
  CHECK(test::has_text(doc, "\"suis\""));
  CHECK(test::has_text(doc, "<eos>"));
  CHECK(test::has_text(doc, "a&b"));
  // "<eos>" (5 characters at 11 px, about 33 px) fits a cell of 40 px: the labels stay level.
  for (pugi::xml_node label : test::with_class(doc, "col-label")) CHECK_FALSE(label.attribute("transform"));

  // One colour bar: the entries are the whole numbers 0 … 3, so one box a number
  // (80 px: 20 px a box, room for every label), labelled top down.
  auto bars = test::with_class(doc, "colorbar");
  REQUIRE(bars.size() == 1);
  std::vector<std::string> ticks;
  for (pugi::xml_node t : bars[0].children("text")) ticks.push_back(t.child_value());
  CHECK(ticks == std::vector<std::string>{"3", "2", "1", "0"});
}

TEST_CASE("viz/save_heatmap_svg: entries not all whole get a gradient with round ticks") {
  test::TempDir dir("viz_gradient");
  // As the matrix above but for one entry, 0.5: labelled at its ends (3 and 0) and at the
  // multiples of a round step between them: 80 px make 2 parts of 1.5, rounded up to a step of 2.
  save_heatmap_svg(dir / "m.svg", tensor({0, 0.5f, 2, 3}, {2, 2}));
  pugi::xml_document doc = test::load_svg(dir / "m.svg");
  CHECK(colorbar_labels(doc) == std::vector<std::string>{"3", "2", "0"});
  CHECK(doc.select_nodes("//linearGradient").size() == 1);
}

TEST_CASE("viz/save_heatmap_svg: whole numbers get one box a number, coloured as their cells") {
  test::TempDir dir("viz_whole");
  // Steps 0 … 4 in one row of 5 cells of 40 px: a bar of 48 px (colorbar_height), 9.6 px a
  // box, so every second box is labelled (WHOLE_GAP = 14 px), from 0 up: 0, 2 and 4.
  save_heatmap_svg(dir / "w.svg", tensor({3, 0, 4, 1, 2}, {1, 5}));
  pugi::xml_document doc = test::load_svg(dir / "w.svg");
  CHECK(colorbar_labels(doc) == std::vector<std::string>{"4", "2", "0"});
  CHECK(doc.select_nodes("//linearGradient").empty());
  std::vector<std::string> boxes;  // top down: 4, 3, 2, 1, 0, then the frame
  for (pugi::xml_node r : test::with_class(doc, "colorbar")[0].children("rect"))
    boxes.push_back(r.attribute("fill").value());
  REQUIRE(boxes.size() == 6);
  CHECK(boxes[0] == "#fde725");  // 4, the top: viridis(1)
  CHECK(boxes[2] == "#21918c");  // 2, the middle: viridis(0.5)
  CHECK(boxes[4] == "#440154");  // 0: viridis(0)
  CHECK(boxes[5] == "none");
  auto cells = cells_by_title(doc);
  for (int k = 0; k <= 4; ++k) {
    CAPTURE(k);
    const int col = std::vector<int>{1, 3, 4, 0, 2}[static_cast<size_t>(k)];  // where k stands in the row
    const std::string title = "0, " + std::to_string(col) + ": " + std::to_string(k);
    REQUIRE(cells.count(title) == 1);
    CHECK(std::string(cells.at(title).attribute("fill").value()) == boxes[static_cast<size_t>(4 - k)]);
  }

  // Not whole: more than WHOLE_LEVELS numbers, limits given, or cells that are block means
  // (doctest runs the test once for each SUBCASE, entering that one alone).
  SUBCASE("13 numbers") { save_heatmap_svg(dir / "g.svg", arange(13).reshape({1, 13})); }
  SUBCASE("limits given") { save_heatmap_svg(dir / "g.svg", tensor({0, 1, 2}, {1, 3}), {.vmin = 0, .vmax = 2}); }
  SUBCASE("pooled") { save_heatmap_svg(dir / "g.svg", zeros({300, 2}) + arange(2)); }
  SUBCASE("a grid of block means") { save_heatmap_grid_svg(dir / "g.svg", zeros({1, 2, 300, 2}) + arange(2)); }
  CHECK(test::load_svg(dir / "g.svg").select_nodes("//linearGradient").size() == 1);
}

TEST_CASE("viz/save_heatmap_grid_svg: a grid of whole numbers shares one bar of boxes") {
  test::TempDir dir("viz_grid_whole");
  save_heatmap_grid_svg(dir / "g.svg", tensor({0, 1, 1, 2, 2, 0, 1, 2}, {1, 2, 2, 2}));
  pugi::xml_document doc = test::load_svg(dir / "g.svg");
  CHECK(doc.select_nodes("//linearGradient").empty());
  CHECK(colorbar_labels(doc) == std::vector<std::string>{"2", "1", "0"});
}

TEST_CASE("viz/save_heatmap_svg long column labels are turned upright") {
  test::TempDir dir("viz_upright");
  save_heatmap_svg(dir / "m.svg", zeros({2, 2}) + arange(2), {.col_labels = {"attention", "weights"}});
  pugi::xml_document doc = test::load_svg(dir / "m.svg");
  auto labels = test::with_class(doc, "col-label");
  REQUIRE(labels.size() == 2);
  for (pugi::xml_node label : labels) CHECK(std::string(label.attribute("transform").value()).find("rotate(-90") == 0);
}

TEST_CASE("viz/save_heatmap_svg edge cases") {
  test::TempDir dir("viz_edges");
  SUBCASE("constant") {
    save_heatmap_svg(dir / "c.svg", full({2, 3}, 0.25f));
    pugi::xml_document doc = test::load_svg(dir / "c.svg");
    auto cells = test::with_class(doc, "cell");
    REQUIRE(cells.size() == 6);
    for (pugi::xml_node c : cells) CHECK(std::string(c.attribute("fill").value()) == "#21918c");  // viridis(0.5)
    CHECK(note_containing(doc, "constant: every entry is 0.25") != "");
  }
  SUBCASE("NaN and Inf") {
    save_heatmap_svg(dir / "n.svg", tensor({0, NaN, std::numeric_limits<float>::infinity(), 1}, {2, 2}));
    pugi::xml_document doc = test::load_svg(dir / "n.svg");
    CHECK(test::with_class(doc, "cell").size() == 2);
    CHECK(test::with_class(doc, "cell nonfinite").size() == 2);
    CHECK(note_containing(doc, "2 entries are NaN/Inf") != "");
    auto cells = cells_by_title(doc);
    CHECK(std::string(cells.at("0, 0: 0").attribute("fill").value()) == "#440154");  // 0 and 1 keep the scale
    CHECK(std::string(cells.at("1, 1: 1").attribute("fill").value()) == "#fde725");
  }
  SUBCASE("masked scores") {
    // Scores masked as d2l does (-1e6), causally: 6 of the 12 entries.
    Tensor m = tensor({1, -1e6f, -1e6f, -1e6f,  //
                       2, 3, -1e6f, -1e6f,      //
                       4, 5, 6, -1e6f},
                      {3, 4});
    save_heatmap_svg(dir / "m.svg", m);
    pugi::xml_document doc = test::load_svg(dir / "m.svg");
    CHECK(test::with_class(doc, "cell masked").size() == 6);
    CHECK(note_containing(doc, "6 masked entries (<= -1e5)") != "");
    auto cells = cells_by_title(doc);
    CHECK(std::string(cells.at("0, 0: 1").attribute("fill").value()) == "#440154");  // the scale is [1, 6]
    CHECK(std::string(cells.at("2, 2: 6").attribute("fill").value()) == "#fde725");
  }
  SUBCASE("every entry masked: no scale, an empty colour bar") {
    save_heatmap_svg(dir / "e.svg", full({2, 2}, -1e6f));
    pugi::xml_document doc = test::load_svg(dir / "e.svg");
    CHECK(test::with_class(doc, "cell masked").size() == 4);
    CHECK(note_containing(doc, "no colour scale: every entry is masked, NaN or Inf") != "");
    auto bars = test::with_class(doc, "colorbar");
    REQUIRE(bars.size() == 1);
    CHECK(bars[0].select_nodes(".//text").empty());
  }
  SUBCASE("pooled") {
    save_heatmap_svg(dir / "p.svg", zeros({300, 2}) + arange(2));
    pugi::xml_document doc = test::load_svg(dir / "p.svg");
    // 300 rows into 256: blocks of 2 rows -> 150 x 2 cells
    CHECK(test::with_class(doc, "cell").size() == 300);
    CHECK(note_containing(doc, "mean over 2x1 blocks: 300 x 2 -> 150 x 2") != "");
  }
  SUBCASE("missing folders are created") {
    std::filesystem::path file = dir / "a/b/c.svg";
    save_heatmap_svg(file, eye(3));
    test::load_svg(file);
  }
  SUBCASE("an unwritable path is an Error naming it") {
    test::write_bytes(dir / "file", "x");  // a file where a folder should be
    std::string path = (dir / "file/m.svg").string();
    CHECK_THROWS_WITH_AS(save_heatmap_svg(path, eye(2)), doctest::Contains(path.c_str()), Error);
  }
  SUBCASE("bad tensors and labels") {
    CHECK_THROWS_WITH_AS(save_heatmap_svg(dir / "x.svg", zeros({2, 2, 2})),
                         doctest::Contains("save_heatmap_svg: expected a 2-D tensor (rows, cols), got shape (2, 2, 2)"),
                         Error);
    CHECK_THROWS_WITH_AS(save_heatmap_svg(dir / "x.svg", zeros({3, 0})),
                         doctest::Contains("empty tensor of shape (3, 0)"), Error);
    CHECK_THROWS_WITH_AS(save_heatmap_svg(dir / "x.svg", zeros({2, 2}), {.col_labels = {"a", "b", "c"}}),
                         doctest::Contains("3 col_labels for a tensor of shape (2, 2), which needs 2"), Error);
    CHECK_FALSE(std::filesystem::exists(dir / "x.svg"));
  }
}

TEST_CASE("viz/save_heatmap_grid_svg") {
  test::TempDir dir("viz_grid");
  // (rows, cols, H, W) = (2, 3, 4, 5): 6 subplots sharing one scale over 0 … 119.
  Tensor m = reshape(arange(120), {2, 3, 4, 5});
  GridOptions opt{.title = "attention weights",
                  .row_titles = {"block 0", "block 1"},
                  .col_titles = {"head 0", "head 1", "head 2"},
                  .cell = {.xlabel = "keys", .ylabel = "queries", .col_labels = {"a", "b", "c", "d", "<eos>"}}};
  save_heatmap_grid_svg(dir / "grid.svg", m, opt);
  pugi::xml_document doc = test::load_svg(dir / "grid.svg");

  auto subplots = test::with_class(doc, "subplot");
  CHECK(subplots.size() == 6);
  CHECK(test::with_class(doc, "colorbar").size() == 1);
  CHECK(test::with_class(doc, "cell").size() == 120);
  CHECK(test::with_class(doc, "col-title").size() == 3);
  CHECK(test::with_class(doc, "row-title").size() == 2);
  CHECK(test::with_class(doc, "title").at(0).child_value() == std::string("attention weights"));
  CHECK(test::has_text(doc, "head 2"));
  CHECK(test::has_text(doc, "block 1"));
  CHECK(test::has_text(doc, "<eos>"));
  // The shared scale: the first entry of the first subplot is the minimum,
  // the last of the last the maximum.
  auto first = subplots.front().children("rect").begin(), last = subplots.back().children("rect").begin();
  for (int i = 0; i < 19; ++i) ++last;
  CHECK(std::string(first->attribute("fill").value()) == "#440154");
  CHECK(std::string(last->attribute("fill").value()) == "#fde725");
  // Tokens along the columns only under the bottom row (5 labels x 3 subplots),
  // row labels only left of the first column (4 x 2).
  CHECK(test::with_class(doc, "col-label").size() == 15);
  CHECK(test::with_class(doc, "row-label").size() == 8);

  // Notes count over every subplot: 2 masked entries and 1 NaN in different subplots.
  Tensor odd = zeros({1, 2, 2, 2}) + arange(2);
  odd.data()[0] = -1e6f;
  odd.data()[5] = -1e6f;
  odd.data()[7] = NaN;
  save_heatmap_grid_svg(dir / "odd.svg", odd);
  pugi::xml_document odd_doc = test::load_svg(dir / "odd.svg");
  CHECK(test::with_class(odd_doc, "subplot").size() == 2);
  CHECK(test::with_class(odd_doc, "cell masked").size() == 2);
  CHECK(test::with_class(odd_doc, "cell nonfinite").size() == 1);
  CHECK(note_containing(odd_doc, "2 masked entries (<= -1e5)") != "");
  CHECK(note_containing(odd_doc, "1 entry is NaN/Inf") != "");

  CHECK_THROWS_WITH_AS(
      save_heatmap_grid_svg(dir / "x.svg", zeros({2, 3})),
      doctest::Contains("save_heatmap_grid_svg: expected a 4-D tensor (rows, cols, H, W), got shape (2, 3)"), Error);
  CHECK_THROWS_WITH_AS(save_heatmap_grid_svg(dir / "x.svg", zeros({2, 0, 3, 3})),
                       doctest::Contains("empty tensor of shape (2, 0, 3, 3)"), Error);
  CHECK_THROWS_WITH_AS(save_heatmap_grid_svg(dir / "x.svg", m, {.col_titles = {"head 0"}}),
                       doctest::Contains("1 col_titles for a tensor of shape (2, 3, 4, 5), which needs 3"), Error);
  CHECK_THROWS_WITH_AS(save_heatmap_grid_svg(dir / "x.svg", m, {.cell = {.row_labels = {"a"}}}),
                       doctest::Contains("1 cell.row_labels for a tensor of shape (2, 3, 4, 5), which needs 4"), Error);
}

TEST_CASE("viz/heatmap svg: a title wider than the picture has it centred under the title") {
  // The same picture with a short and a long title: the long one widens the
  // file, and the body moves right by half of what it widened (so the
  // margins either side of it are equal), nothing else.
  test::TempDir dir("viz_wide_title");
  auto width_and_shift = [&](const std::string& name) {
    pugi::xml_document doc = test::load_svg(dir / name);
    double width = doc.document_element().attribute("width").as_double(), shift = 0;
    std::vector<pugi::xml_node> body = test::with_class(doc, "body");
    if (!body.empty()) REQUIRE(std::sscanf(body.at(0).attribute("transform").value(), "translate(%lf,0)", &shift) == 1);
    return std::pair{width, shift};
  };
  const std::string long_title(120, 'w');
  Tensor m = reshape(arange(12), {3, 4});
  save_heatmap_svg(dir / "short.svg", m, {.title = "w"});
  save_heatmap_svg(dir / "long.svg", m, {.title = long_title});
  Tensor g = reshape(arange(24), {1, 2, 3, 4});
  save_heatmap_grid_svg(dir / "grid_short.svg", g, {.title = "w"});
  save_heatmap_grid_svg(dir / "grid_long.svg", g, {.title = long_title});
  for (std::pair<const char*, const char*> files :
       {std::pair{"short.svg", "long.svg"}, std::pair{"grid_short.svg", "grid_long.svg"}}) {
    const char *short_file = files.first, *long_file = files.second;
    CAPTURE(long_file);
    auto [short_width, no_shift] = width_and_shift(short_file);
    auto [long_width, shift] = width_and_shift(long_file);
    CHECK(no_shift == 0);
    CHECK(long_width > short_width + 100);
    CHECK(shift == doctest::Approx((long_width - short_width) / 2).epsilon(0.01));
  }
}

TEST_CASE("viz/heatmap svg: no two texts overlap, none leaves the picture") {
  // Each picture's text boxes, estimated from the characters (test::check_text_layout).
  test::TempDir dir("viz_layout");
  SUBCASE("d2l's masked softmax: long row titles are set level, wrapped, beside their row") {
    // (2 valid-length kinds, 2 batches, 2 queries, 4 keys): panels 48 px tall, shorter than the titles.
    Tensor m = reshape(arange(32), {2, 2, 2, 4}) / 32;
    GridOptions opt{.title = "Masked softmax",
                    .row_titles = {"valid lens [2, 3]", "valid lens [[1, 3], [2, 4]]"},
                    .col_titles = {"batch 0", "batch 1"},
                    .cell = {.xlabel = "keys", .ylabel = "queries"}};
    save_heatmap_grid_svg(dir / "masked.svg", m, opt);
    pugi::xml_document doc = test::load_svg(dir / "masked.svg");
    test::check_text_layout(doc);
    std::vector<pugi::xml_node> titles = test::with_class(doc, "row-title");
    REQUIRE(titles.size() >= 2);
    for (pugi::xml_node t : titles) CHECK_FALSE(t.attribute("transform"));  // level, not turned
    std::string all;
    for (pugi::xml_node t : titles) all += std::string(t.child_value()) + " ";
    CHECK(all == "valid lens [2, 3] valid lens [[1, 3], [2, 4]] ");  // wrapped, nothing left out
  }
  SUBCASE("short row titles stay upright; long column titles wrap over their panel") {
    Tensor m = reshape(arange(2 * 3 * 4 * 4), {2, 3, 4, 4});
    GridOptions opt{.title = "t",
                    .row_titles = {"block 0", "block 1"},
                    .col_titles = {"sentence 0 of the batch, unmasked", "sentence 1", "a rather long third title"},
                    .cell = {.xlabel = "keys", .ylabel = "queries"}};
    save_heatmap_grid_svg(dir / "upright.svg", m, opt);
    pugi::xml_document doc = test::load_svg(dir / "upright.svg");
    test::check_text_layout(doc);
    for (pugi::xml_node t : test::with_class(doc, "row-title"))
      CHECK(std::string(t.attribute("transform").value()).find("rotate(-90") == 0);
    CHECK(test::with_class(doc, "col-title").size() > 3);  // some wrapped into two lines
  }
  SUBCASE("titles too long for any room are cut with …") {
    Tensor m = reshape(arange(4), {2, 2, 1, 1});
    const std::string word(60, 'w');
    save_heatmap_grid_svg(dir / "cut.svg", m,
                          {.row_titles = {word, word + " " + word + " " + word},
                           .col_titles = {word, "x"},
                           .cell = {.xlabel = word, .ylabel = word}});
    pugi::xml_document doc = test::load_svg(dir / "cut.svg");
    test::check_text_layout(doc);
    bool cut = false;
    for (const std::string& t : test::texts(doc)) cut = cut || t.find("…") != std::string::npos;
    CHECK(cut);
  }
  SUBCASE("single heatmaps: one row, upright tokens, a long axis label") {
    save_heatmap_svg(
        dir / "row.svg", reshape(arange(10), {1, 10}),
        {.title = "one row",
         .xlabel = "a label much wider than the ten cells above it, by far",
         .ylabel = "a long y label",
         .row_labels = {"weight"},
         .col_labels = {"this", "concert", "is", "amazing", "but", "the", "album", "is", "not", "lovely"}});
    test::check_text_layout(test::load_svg(dir / "row.svg"));
    save_heatmap_svg(dir / "big.svg", reshape(arange(50 * 50), {50, 50}) / 2500,
                     {.title = "Nadaraya–Watson attention weights",
                      .xlabel = "training inputs x_i (keys, sorted)",
                      .ylabel = "test inputs x (queries)"});
    test::check_text_layout(test::load_svg(dir / "big.svg"));
  }
}

TEST_CASE("viz/heatmap svg: the colour bar's ticks are round values at least TICK_GAP apart") {
  // Every bar is labelled at both ends; between them only multiples of one
  // step of 1, 2 or 5 times a power of ten, each at least TICK_GAP px from its neighbours.
  for (auto range : {std::pair{0.0, 1.0},
                     {0.0, 0.672},
                     {0.4, 0.97},
                     {-3.0, 7.5},
                     {0.211, 0.304},
                     {0.0, 1e-6},
                     {-1e6, 0.0},
                     {12.0, 12.5}}) {
    const double lo = range.first, hi = range.second;  // not a structured binding: CAPTURE cannot take one in clang 14
    for (double height : {2.0, 24.0, 48.0, 80.0, 96.0, 160.0, 480.0}) {
      CAPTURE(lo);
      CAPTURE(hi);
      CAPTURE(height);
      std::vector<double> ticks = detail::colorbar_ticks(lo, hi, height);
      const double bar = detail::colorbar_height(height);
      CHECK(bar >= height);
      REQUIRE(ticks.size() >= 2);
      CHECK(ticks.front() == hi);
      CHECK(ticks.back() == lo);
      for (size_t i = 1; i < ticks.size(); ++i)
        CHECK(bar * (ticks[i - 1] - ticks[i]) / (hi - lo) >= detail::TICK_GAP - 1e-9);  // px apart, top down
      if (ticks.size() > 3) {                     // the step between interior ticks: 1, 2 or 5 times a power of ten
        const double step = ticks[1] - ticks[2];  // (up to the rounding of k·step in floats)
        const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
        CHECK((std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 5) < 1e-6));
        for (size_t i = 2; i + 1 < ticks.size(); ++i) CHECK(ticks[i - 1] - ticks[i] == doctest::Approx(step));
      }
    }
  }
}

TEST_CASE("viz/heatmap svg: the notes say when panels share a scale, or it is fixed") {
  test::TempDir dir("viz_scale_notes");
  save_heatmap_grid_svg(dir / "grid.svg", reshape(arange(16), {2, 2, 2, 2}));
  CHECK(note_containing(test::load_svg(dir / "grid.svg"), "one colour scale for all 4 panels") != "");
  save_heatmap_grid_svg(dir / "fixed_grid.svg", reshape(arange(16), {2, 2, 2, 2}) / 16,
                        {.cell = {.vmin = 0, .vmax = 1}});
  CHECK(note_containing(test::load_svg(dir / "fixed_grid.svg"),
                        "one colour scale, fixed at 0 to 1, for all 4 panels") != "");
  save_heatmap_svg(dir / "fixed.svg", reshape(arange(4), {2, 2}) / 4, {.vmin = 0, .vmax = 1});
  CHECK(note_containing(test::load_svg(dir / "fixed.svg"), "colour scale fixed at 0 to 1") != "");
  save_heatmap_svg(dir / "free.svg", reshape(arange(4), {2, 2}));
  CHECK(note_containing(test::load_svg(dir / "free.svg"), "colour scale") == "");
}

// heatmap_svg and heatmap_grid_svg are the save_ functions' pictures, kept in memory.
TEST_CASE("viz/heatmap_svg and heatmap_grid_svg return the text save_ writes") {
  test::TempDir dir("viz_heatmap_text_svg");
  Tensor m = tensor({0, 1, 2, 3, 4, 5}, {2, 3});
  HeatmapOptions opt{.title = "weights", .xlabel = "keys", .ylabel = "queries"};
  save_heatmap_svg(dir / "m.svg", m, opt);
  CHECK(heatmap_svg(m, opt) == test::read_bytes(dir / "m.svg"));

  GridOptions grid{.title = "heads", .col_titles = {"head 0", "head 1"}, .cell = opt};
  Tensor g = stack({m, m * 2}).reshape({1, 2, 2, 3});  // (1, 2, 2, 3)
  save_heatmap_grid_svg(dir / "g.svg", g, grid);
  CHECK(heatmap_grid_svg(g, grid) == test::read_bytes(dir / "g.svg"));
}
