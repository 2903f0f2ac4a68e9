// Tests for src/viz/heatmap_text.cpp: the terminal heatmap. The expected
// texts are written by hand from the rules in heatmap_text.cpp's header
// (two characters per entry, the ramp " .:-=+*#%@" in tenths of the range,
// labels cut to 8 characters and column labels written downwards).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>
#include <qkv/qkv.hpp>

#include <cstdio>
#include <cstdlib>

#include <cmath>
#include <limits>
#include <string>

#include "viz/viz_test_util.hpp"

using namespace qkv;
using namespace qkv::viz;

namespace {
const TextOptions PLAIN{.color = Color::Never};
const float NaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("viz/heatmap_text plain") {
  SUBCASE("2x2 with labels") {
    // 0 1 2 3 over [0, 3]: t = 0, 1/3, 2/3, 1 -> tenths 0, 3, 6, 9 -> ' ', '-', '*', '@'
    Tensor m = tensor({0, 1, 2, 3}, {2, 2});
    HeatmapOptions opt{
        .title = "T", .xlabel = "keys", .ylabel = "q", .row_labels = {"a", "b"}, .col_labels = {"x", "y"}};
    CHECK(heatmap_text(m, opt, PLAIN) ==
          "T\n"
          "q  keys\n"
          "   x y\n"
          "  +----+\n"
          "a |  --|\n"
          "b |**@@|\n"
          "  +----+\n"
          "scale: ' '=0 '-'=1 '*'=2 '@'=3\n");  // whole numbers: each its own character
  }
  SUBCASE("not whole numbers, or 10 and more of them: each character's lowest value") {
    const std::string ramp =
        "scale: ' '=0 '.'=0.3 ':'=0.6 '-'=0.9 '='=1.2 '+'=1.5 '*'=1.8 '#'=2.1 '%'=2.4 '@'=2.7 (up to 3)\n";
    CHECK(heatmap_text(tensor({0, 1, 2.5f, 3}, {2, 2}), {}, PLAIN).find(ramp) != std::string::npos);
    // 0 … 10: 11 numbers for 10 characters, so two would share one.
    CHECK(heatmap_text(arange(11).reshape({1, 11}), {}, PLAIN).find(" (up to 10)\n") != std::string::npos);
    // 0 … 9: 10 numbers, a character each.
    CHECK(heatmap_text(arange(10).reshape({1, 10}), {}, PLAIN)
              .find("scale: ' '=0 '.'=1 ':'=2 '-'=3 '='=4 '+'=5 '*'=6 '#'=7 '%'=8 '@'=9\n") != std::string::npos);
  }
  SUBCASE("pooled, masked and NaN") {
    // 2x2 blocks: mean 0, mean 1; a block with a NaN is NaN; a block of masked scores is masked.
    // The scale runs over the 11 finite, unmasked entries: [0, 2].
    Tensor m = tensor({0, 0, 1, 1,          //
                       0, 0, 1, 1,          //
                       2, 2, -1e6f, -1e6f,  //
                       2, NaN, -1e6f, -1e6f},
                      {4, 4});
    CHECK(heatmap_text(m, {}, {.max_rows = 2, .max_cols = 2, .color = Color::Never}) ==
          "   0 2\n"
          "  +----+\n"
          "0 |  ++|\n"
          "2 |??xx|\n"
          "  +----+\n"
          "scale: ' '=0 '.'=0.2 ':'=0.4 '-'=0.6 '='=0.8 '+'=1 '*'=1.2 '#'=1.4 '%'=1.6 '@'=1.8 (up to 2)\n"
          "mean over 2x2 blocks: 4 x 4 -> 2 x 2\n"
          "4 masked entries (<= -1e5), drawn as xx\n"
          "1 entry is NaN/Inf, drawn as ?? (NaN) and !! (Inf)\n");
  }
  SUBCASE("constant, long labels cut, column labels downwards") {
    Tensor m = tensor({5}, {1, 1});
    HeatmapOptions opt{.row_labels = {"attention"}, .col_labels = {"<eos>"}};
    CHECK(heatmap_text(m, opt, PLAIN) ==
          "          <\n"
          "          e\n"
          "          o\n"
          "          s\n"
          "          >\n"
          "         +--+\n"
          "attenti… |++|\n"
          "         +--+\n"
          "constant: every entry is 5, drawn as ++\n");
  }
  SUBCASE("UTF-8 tokens are cut and aligned by characters, not bytes") {
    // "équipement" is 10 characters (11 bytes): cut to 7 and "…"; "été" is 3 wide.
    // "où!!" runs past its one column and the border's corner (offsets 0 … 2): downwards.
    Tensor m = tensor({1, 2}, {2, 1});
    HeatmapOptions opt{.row_labels = {"équipement", "été"}, .col_labels = {"où!!"}};
    CHECK(heatmap_text(m, opt, PLAIN) ==
          "          o\n"
          "          ù\n"
          "          !\n"
          "          !\n"
          "         +--+\n"
          "équipem… |  |\n"
          "été      |@@|\n"
          "         +--+\n"
          "scale: ' '=1 '@'=2\n");
  }
  SUBCASE("column labels across when each ends before the next begins (an axis's numbers)") {
    // Labels at columns 0, 3 and 5 start at offsets 0, 6 and 10 (2 characters a column) and end
    // before 2, 9 and 12 (é is one character): each before the next begins, the last by the
    // border's corner (offset 12). One line.
    // Values 0 … 5 over [0, 5]: tenths 0, 2, 4, 6, 8 and 9 (5 is the top), ' ', ':', '=', '*', '%', '@'.
    Tensor m = tensor({0, 1, 2, 3, 4, 5}, {1, 6});
    HeatmapOptions opt{.row_labels = {"y"}, .col_labels = {"-1", "", "", "0.5", "", "é2"}};
    const std::string text = heatmap_text(m, opt, PLAIN);
    CHECK(text.rfind("   -1    0.5 é2\n"
                     "  +------------+\n"
                     "y |  ::==**%%@@|\n"
                     "  +------------+\n",
                     0) == 0);
    // Two more characters in the last label run it past the corner: downwards again.
    opt.col_labels = {"-1", "", "", "0.5", "", "é2.."};
    CHECK(heatmap_text(m, opt, PLAIN).rfind("   -     0   é\n", 0) == 0);
  }
  SUBCASE("Inf, and limits given") {
    // vmin 0, vmax 10: 5 -> t = 0.5 -> '+'; 20 is clamped to '@'; +Inf is marked.
    Tensor m = tensor({5, 20, std::numeric_limits<float>::infinity()}, {1, 3});
    HeatmapOptions opt{.vmin = 0, .vmax = 10};
    CHECK(heatmap_text(m, opt, PLAIN) ==
          "   0 1 2\n"
          "  +------+\n"
          "0 |++@@!!|\n"
          "  +------+\n"
          "scale: ' '=0 '.'=1 ':'=2 '-'=3 '='=4 '+'=5 '*'=6 '#'=7 '%'=8 '@'=9 (up to 10)\n"
          "1 entry is NaN/Inf, drawn as ?? (NaN) and !! (Inf)\n");
  }
  SUBCASE("every entry masked") {
    std::string text = heatmap_text(full({2, 2}, -1e6f), {}, PLAIN);
    CHECK(text.find("1 |xxxx|\n") != std::string::npos);
    CHECK(text.find("scale: none (every entry is masked, NaN or Inf)\n") != std::string::npos);
    CHECK(text.find("4 masked entries (<= -1e5)") != std::string::npos);
  }
}

TEST_CASE("viz/heatmap_text large matrices are pooled") {
  // 200 x 256 into 32 x 64: blocks of ceil(200/32) = 7 rows and ceil(256/64) = 4 columns
  // -> ceil(200/7) = 29 rows and 64 columns.
  Tensor m = rand({200, 256});
  std::string text = heatmap_text(m, {}, PLAIN);
  CHECK(text.find("mean over 7x4 blocks: 200 x 256 -> 29 x 64\n") != std::string::npos);
  int64_t rows = 0;
  size_t start = 0;
  while ((start = text.find(" |", start)) != std::string::npos) ++rows, ++start;
  CHECK(rows == 29);
  CHECK(text.find("\n196 |") != std::string::npos);  // the last block starts at row 28 * 7 = 196
}

TEST_CASE("viz/heatmap_text colour") {
  // [[0, 0.5]]: viridis(0) = #440154 = (68, 1, 84) and viridis(1) = #fde725 = (253, 231, 37) as backgrounds.
  Tensor m = tensor({0, 0.5f}, {1, 2});
  std::string text = heatmap_text(m, {}, {.color = Color::Always});
  CHECK(text.find("0 |\x1b[48;2;68;1;84m  \x1b[0m\x1b[48;2;253;231;37m  \x1b[0m|\n") != std::string::npos);
  CHECK(text.find("scale: 0 \x1b[48;2;68;1;84m \x1b[0m") != std::string::npos);  // the ramp starts at the low end
  CHECK(heatmap_text(m, {}, PLAIN).find('\x1b') == std::string::npos);
  // [[0, 1]], whole numbers: each number with its cells' colour.
  CHECK(heatmap_text(tensor({0, 1}, {1, 2}), {}, {.color = Color::Always})
            .find("scale: 0 \x1b[48;2;68;1;84m  \x1b[0m 1 \x1b[48;2;253;231;37m  \x1b[0m\n") != std::string::npos);
}

namespace {

// Runs `f` with stdout on a pseudo-terminal, so that isatty(STDOUT_FILENO) is
// true whatever runs the tests, and puts stdout back.
template <class F>
void with_terminal_stdout(F f) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(grantpt(master) == 0);
  REQUIRE(unlockpt(master) == 0);
  int terminal = open(ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(terminal >= 0);
  std::fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  dup2(terminal, STDOUT_FILENO);
  f();
  dup2(saved, STDOUT_FILENO);
  close(saved);
  close(terminal);
  close(master);
}

}  // namespace

TEST_CASE("viz/heatmap_text NO_COLOR") {
  Tensor m = tensor({0, 1}, {1, 2});
  with_terminal_stdout([&] {
    bool on_terminal = isatty(STDOUT_FILENO) == 1;
    CHECK(on_terminal);
    {
      test::ScopedEnv env("NO_COLOR", std::nullopt);  // a terminal and no NO_COLOR: colour
      CHECK(use_color(Color::Auto));
      CHECK(heatmap_text(m).find("\x1b[48;2;68;1;84m") != std::string::npos);
    }
    {
      test::ScopedEnv env("NO_COLOR", "1");  // NO_COLOR set: plain, even on a terminal
      CHECK_FALSE(use_color(Color::Auto));
      CHECK(heatmap_text(m).find('\x1b') == std::string::npos);
      CHECK(use_color(Color::Always));  // Always overrides NO_COLOR
    }
    {
      test::ScopedEnv env("NO_COLOR", "");  // empty counts as unset (no-color.org)
      CHECK(use_color(Color::Auto));
    }
  });
  {
    // stdout not a terminal (a pipe): plain, with or without NO_COLOR.
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    std::fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fds[1], STDOUT_FILENO);
    test::ScopedEnv env("NO_COLOR", std::nullopt);
    bool color = use_color(Color::Auto);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    close(fds[0]);
    close(fds[1]);
    CHECK_FALSE(color);
  }
}

TEST_CASE("viz/heatmap_text errors") {
  CHECK_THROWS_WITH_AS(heatmap_text(zeros({3})),
                       doctest::Contains("heatmap_text: expected a 2-D tensor (rows, cols), got shape (3)"), Error);
  CHECK_THROWS_WITH_AS(heatmap_text(zeros({2, 3, 4})), doctest::Contains("got shape (2, 3, 4)"), Error);
  CHECK_THROWS_WITH_AS(heatmap_text(zeros({0, 3})), doctest::Contains("heatmap_text: empty tensor of shape (0, 3)"),
                       Error);
  CHECK_THROWS_WITH_AS(heatmap_text(Tensor()), doctest::Contains("undefined"), Error);
  CHECK_THROWS_WITH_AS(heatmap_text(zeros({2, 2}), {.row_labels = {"a", "b", "c"}}),
                       doctest::Contains("heatmap_text: 3 row_labels for a tensor of shape (2, 2), which needs 2"),
                       Error);
  CHECK_THROWS_WITH_AS(heatmap_text(zeros({2, 5}), {.col_labels = {"a"}}),
                       doctest::Contains("1 col_labels for a tensor of shape (2, 5), which needs 5"), Error);
  CHECK_THROWS_WITH_AS(heatmap_text(zeros({2, 2}), {.vmin = 1, .vmax = 1}),
                       doctest::Contains("vmin 1 must be below vmax 1"), Error);
  CHECK_THROWS_WITH_AS(heatmap_text(zeros({2, 2}), {.vmin = 1}), doctest::Contains("colour range"), Error);
  CHECK_THROWS_WITH_AS(heatmap_text(zeros({2, 2}), {}, {.max_rows = 0}), doctest::Contains("max_rows"), Error);
}
