// Tests for src/viz/graph.cpp: the autograd graph as DOT, checked by its
// structure (nodes, edges, labels) for expressions whose graphs are known.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "io/io_test_util.hpp"
#include "viz/viz_test_util.hpp"

using namespace qkv;
using namespace qkv::viz;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0, end = 0;
  while ((end = text.find('\n', start)) != std::string::npos) {
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

int64_t count_lines(const std::string& dot, const std::string& part) {
  auto lines = lines_of(dot);
  return std::count_if(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("viz/graph_dot of (a * b + c).sum()") {
  Tensor a = ones({2, 3}).requires_grad_(), b = ones({2, 3}).requires_grad_(), c = ones({2, 3}).requires_grad_();
  Tensor loss = sum(a * b + c);
  std::string dot = graph_dot(loss);
  CHECK(dot.rfind("digraph autograd {\n", 0) == 0);
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  // Nodes: three ops (Mul, Add, Sum) and three leaves; edges a, b -> Mul; Mul, c -> Add; Add -> Sum.
  CHECK(count_lines(dot, "[label=") == 6);
  CHECK(count_lines(dot, " -> ") == 5);
  CHECK(count_lines(dot, "label=\"MulBackward\\n(2, 3)\"") == 1);
  CHECK(count_lines(dot, "label=\"AddBackward\\n(2, 3)\"") == 1);
  CHECK(count_lines(dot, "label=\"SumBackward\\n()\"") == 1);
  CHECK(count_lines(dot, "label=\"leaf (2, 3)\\nrequires_grad\"") == 3);
  // Breadth-first from the root: t0 = Sum, t1 = Add, t2 = Mul, t3 = c, t4 = a, t5 = b.
  CHECK(count_lines(dot, "t0 [label=\"SumBackward\\n()\", shape=ellipse, peripheries=2]") == 1);
  for (const char* edge : {"t1 -> t0;", "t2 -> t1;", "t3 -> t1;", "t4 -> t2;", "t5 -> t2;"})
    CHECK_MESSAGE(count_lines(dot, edge) == 1, edge);
}

TEST_CASE("viz/graph_dot: constants, reuse, lone leaves, deep graphs") {
  SUBCASE("a constant input is a leaf without requires_grad") {
    Tensor x = ones({3}).requires_grad_();
    std::string dot = graph_dot(x * zeros({3}));
    CHECK(count_lines(dot, "label=\"leaf (3)\\nrequires_grad\"") == 1);
    CHECK(count_lines(dot, "label=\"leaf (3)\", shape=box") == 1);
  }
  SUBCASE("x * x: one leaf, two edges") {
    Tensor x = ones({3}).requires_grad_();
    std::string dot = graph_dot(x * x);
    CHECK(count_lines(dot, "[label=") == 2);
    CHECK(count_lines(dot, "t1 -> t0;") == 2);
  }
  SUBCASE("a leaf alone") {
    std::string dot = graph_dot(ones({2, 2}));
    CHECK(count_lines(dot, "[label=") == 1);
    CHECK(count_lines(dot, "t0 [label=\"leaf (2, 2)\", shape=box, peripheries=2]") == 1);
    CHECK(count_lines(dot, " -> ") == 0);
  }
  SUBCASE("a chain of 5000 ops") {
    Tensor x = ones({1}).requires_grad_();
    Tensor y = x;
    for (int i = 0; i < 5000; ++i) y = y + 1.0f;
    std::string dot = graph_dot(y);
    CHECK(count_lines(dot, "[label=") == 5001);
    CHECK(count_lines(dot, " -> ") == 5000);
  }
  CHECK_THROWS_WITH_AS(graph_dot(Tensor()), doctest::Contains("graph_dot: undefined tensor"), Error);
}

TEST_CASE("viz/save_graph with and without Graphviz") {
  test::TempDir dir("viz_graph");
  Tensor a = ones({2}).requires_grad_();
  Tensor loss = sum(exp(a) * a);
  SUBCASE("dot on the PATH renders an SVG") {
    GraphFiles files = save_graph(dir / "out/graph", loss);
    CHECK(files.dot == dir / "out/graph.dot");
    CHECK(test::read_bytes(files.dot) == graph_dot(loss));
    if (std::system("command -v dot > /dev/null") != 0) {
      MESSAGE("Graphviz's dot is not installed: only the no-Graphviz path is tested");
      CHECK(files.svg.empty());
    } else {
      CHECK(files.svg == dir / "out/graph.svg");
      pugi::xml_document doc = test::load_svg(files.svg);
      CHECK(test::has_text(doc, "ExpBackward"));  // Graphviz writes each label line as a <text>
      CHECK(test::has_text(doc, "SumBackward"));
    }
  }
  SUBCASE("a dot that fails is an Error naming the files") {
    std::filesystem::create_directories(dir / "bin");
    test::write_bytes(dir / "bin/dot", "#!/bin/sh\nexit 3\n");
    std::filesystem::permissions(dir / "bin/dot", std::filesystem::perms::owner_all);
    test::ScopedEnv path("PATH", (dir / "bin").string());
    CHECK_THROWS_WITH_AS(save_graph(dir / "graph", loss),
                         doctest::Contains(fmt::format("save_graph: `{} -Tsvg < '{}'` failed (exit status 3)",
                                                       (dir / "bin/dot").string(), (dir / "graph.dot").string())
                                               .c_str()),
                         Error);
    CHECK(std::filesystem::exists(dir / "graph.dot"));
    CHECK_FALSE(std::filesystem::exists(dir / "graph.svg"));
  }
  SUBCASE("a dot that exits 0 but prints no SVG is an Error, and no SVG file is left") {
    std::filesystem::create_directories(dir / "bin");
    test::write_bytes(dir / "bin/dot", "#!/bin/sh\nexit 0\n");
    std::filesystem::permissions(dir / "bin/dot", std::filesystem::perms::owner_all);
    test::ScopedEnv path("PATH", (dir / "bin").string());
    CHECK_THROWS_WITH_AS(save_graph(dir / "graph", loss), doctest::Contains("exited 0 but printed no SVG (0 bytes)"),
                         Error);
    CHECK(std::filesystem::exists(dir / "graph.dot"));
    CHECK_FALSE(std::filesystem::exists(dir / "graph.svg"));
  }
  SUBCASE("without dot only the .dot file is written") {
    test::ScopedEnv path("PATH", (dir / "empty").string());  // a folder with no dot in it
    GraphFiles files = save_graph(dir / "graph", loss);
    CHECK(files.svg.empty());
    CHECK(std::filesystem::exists(dir / "graph.dot"));
    CHECK_FALSE(std::filesystem::exists(dir / "graph.svg"));
  }
}

// A stand-in for Graphviz's dot that reads its arguments as dot does: "-V…"
// prints the version and exits 0, "-T<format>" other than svg fails, "-o"
// names the output, any other "-…" is an unknown option, the rest are input
// files (none: standard input). It draws a one-line SVG that counts the edges.
constexpr const char* kFakeDot = R"sh(#!/bin/sh
PATH=/usr/bin:/bin
out=""; input=""; format=""
while [ $# -gt 0 ]; do
  case "$1" in
    -V*) echo "dot - graphviz version 2.42.2 (a stand-in)" >&2; exit 0 ;;
    -T*) format="${1#-T}" ;;
    -o) shift; out="$1" ;;
    -o*) out="${1#-o}" ;;
    -*) echo "dot: unknown option $1" >&2; exit 1 ;;
    *) input="$1" ;;
  esac
  shift
done
[ "$format" = svg ] || { echo "dot: format '$format' not recognized" >&2; exit 1; }
if [ -n "$input" ]; then text=$(cat -- "$input") || exit 2; else text=$(cat); fi
edges=$(printf '%s\n' "$text" | grep -c -- '->')
svg="<svg xmlns=\"http://www.w3.org/2000/svg\"><text>$edges edges</text></svg>"
if [ -n "$out" ]; then printf '%s\n' "$svg" > "$out"; else printf '%s\n' "$svg"; fi
)sh";

TEST_CASE("viz/save_graph: no stem is read by dot as an option, and the SVG is checked") {
  test::TempDir dir("viz_graph_stems");
  std::filesystem::create_directories(dir / "bin");
  test::write_bytes(dir / "bin/dot", kFakeDot);
  std::filesystem::permissions(dir / "bin/dot", std::filesystem::perms::owner_all);
  Tensor a = ones({2}).requires_grad_();
  Tensor loss = sum(exp(a) * a);
  const int64_t edges = count_lines(graph_dot(loss), "->");
  // Stems relative to the working folder, as a lesson's "--out ." makes them: run in a child that moves there.
  for (const std::string stem : {"-V", "-Tpng", "-o", "graph"}) {
    CAPTURE(stem);
    test::ChildResult child = test::run_in_child([&](std::string& out) {
      if (chdir(dir.path.c_str()) != 0) return 2;
      test::ScopedEnv path("PATH", (dir / "bin").string());
      GraphFiles files = save_graph(stem, loss);
      out = files.svg.string();
      return 0;
    });
    CHECK(child.exit_code == 0);
    CHECK(child.output == stem + ".svg");
    CHECK(test::read_bytes(dir / (stem + ".dot")) == graph_dot(loss));
    CHECK(test::read_bytes(dir / (stem + ".svg")) ==
          fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\"><text>{} edges</text></svg>\n", edges));
  }
}
