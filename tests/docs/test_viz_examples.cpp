// The example of docs/viz.md, compiled and run as written there, in a
// scratch folder; only the CHECKs are added.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include "docs/in_directory.hpp"
#include "viz/viz_test_util.hpp"

using namespace qkv;

TEST_CASE("docs/viz: example") {
  test::TempDir scratch("viz_readme");
  test::InDirectory here(scratch.path);  // the example writes into ./pictures
  // --- as in docs/viz.md ---
  std::filesystem::path dir = "pictures";
  // Attention of 3 queries over 4 keys, the last key padding (masked as d2l does, with -1e6).
  Tensor scores = tensor({2, 1, 0, -1e6f, 0, 3, 1, -1e6f, 1, 1, 1, -1e6f}, {3, 4});
  Tensor weights = softmax(scores, -1);  // (3, 4)
  viz::HeatmapOptions opt{.title = "attention",
                          .xlabel = "keys",
                          .ylabel = "queries",
                          .row_labels = {"i", "am", "home"},
                          .col_labels = {"je", "suis", "<eos>", "<pad>"}};
  fmt::print("{}", viz::heatmap_text(weights, opt));  // coloured cells in a terminal, " .:-=+*#%@" in a file
  viz::save_heatmap_svg(dir / "weights.svg", weights, opt);
  viz::save_heatmap_svg(dir / "scores.svg", scores, opt);  // the padding drawn grey: "3 masked entries"

  std::vector<float> loss{2.3f, 1.2f, 0.8f, 0.6f, 0.5f};
  viz::Series train{.name = "train", .y = loss};  // x: 0, 1, 2, …
  fmt::print("{}", viz::line_plot_text({train}, {.xlabel = "epoch", .ylabel = "loss", .height = 8}));
  viz::save_line_plot_svg(dir / "loss.svg", {train}, {.title = "loss", .xlabel = "epoch"});

  Tensor w = ones({4, 3}).requires_grad_();
  Tensor y = sum(relu(matmul(weights, w)));
  viz::GraphFiles files = viz::save_graph(dir / "graph", y);  // graph.dot, and graph.svg if Graphviz is installed
  // --- end ---
  for (const char* svg : {"weights.svg", "scores.svg", "loss.svg"}) test::load_svg(scratch.path / dir / svg);
  CHECK(std::filesystem::exists(files.dot));
  CHECK(viz::heatmap_text(scores, opt, {.color = viz::Color::Never}).find("3 masked entries (<= -1e5)") !=
        std::string::npos);
  // The plain text docs/viz.md shows. By hand: the rows are softmax(2, 1, 0) = (0.665, 0.245, 0.090),
  // softmax(0, 3, 1) = (0.042, 0.844, 0.114) and (1/3, 1/3, 1/3), each with 0 for the padding;
  // over [0, 0.844] their tenths are (7, 2, 1, 0), (0, 9, 1, 0) and (3, 3, 3, 0).
  CHECK(viz::heatmap_text(weights, opt, {.color = viz::Color::Never}) ==
        "attention\n"
        "queries  keys\n"
        "         j s < <\n"
        "         e u e p\n"
        "           i o a\n"
        "           s s d\n"
        "             > >\n"
        "        +--------+\n"
        "i       |##::..  |\n"
        "am      |  @@..  |\n"
        "home    |------  |\n"
        "        +--------+\n"
        "scale: ' '=0 '.'=0.0844 ':'=0.169 '-'=0.253 '='=0.338 '+'=0.422 '*'=0.506 '#'=0.591 '%'=0.675 '@'=0.759 "
        "(up to 0.844)\n");
  CHECK(viz::graph_dot(y).find("MatmulBackward") != std::string::npos);
}
