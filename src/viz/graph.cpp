// graph_dot and save_graph: the autograd graph behind a tensor, as Graphviz DOT.
//
// The graph is the one backward() walks (autograd.hpp): a tensor made by an
// op holds a Node with the op's name and an edge to each input. Walking it
// breadth-first from the root gives every op and leaf once; an op node shows
// the op's name and its output's shape, a leaf node its shape (filled when it
// requires grad), and a constant input its shape. An input used twice
// (x * x) gets two edges.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/viz/graph.hpp>

#include <fcntl.h>  // O_RDONLY, O_CLOEXEC
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "viz/common.hpp"

// The environment the dot process inherits. POSIX has the program declare it
// (glibc also does, under _GNU_SOURCE; other C libraries do not).
extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace qkv::viz {

namespace {

// A DOT string literal's contents: backslash and quote escaped (labels hold \n on purpose, added after).
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

// The full path of `program` in a folder of $PATH, or empty when it is in none.
std::string find_on_path(std::string_view program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::string_view folders = path;
  while (true) {
    size_t colon = folders.find(':');
    std::string folder(folders.substr(0, colon));
    std::string candidate = (folder.empty() ? "." : folder) + "/" + std::string(program);
    struct stat info {};
    if (stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) return "";
    folders.remove_prefix(colon + 1);
  }
}

// `dot -Tsvg` run on the file `in`: the SVG it prints.
// NOTE: no file name is given to dot at all. The .dot file is its standard
// input and the SVG comes back on its standard output, so no name (a stem
// "-V" or "-Tpng") can be read as an option, and the SVG is then written by
// the same atomic save as every picture. dot is run directly, without a shell.
std::string render_svg(const std::string& dot, const std::filesystem::path& in, const char* op) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) fail("{}: cannot make a pipe for {}: {}", op, dot, std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::string program = dot, format = "-Tsvg";
  std::vector<char*> argv{program.data(), format.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, dot.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    fail("{}: cannot run {} to render '{}': {}", op, dot, in.string(), std::strerror(spawned));
  }
  std::string svg;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    svg.append(buffer, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) fail("{}: lost the dot process rendering '{}'", op, in.string());
  const std::string command = fmt::format("`{} -Tsvg < '{}'`", dot, in.string());
  if (!WIFEXITED(status)) fail("{}: {} was killed (signal {})", op, command, WTERMSIG(status));
  if (WEXITSTATUS(status) != 0) fail("{}: {} failed (exit status {})", op, command, WEXITSTATUS(status));
  if (svg.find("<svg") == std::string::npos)
    fail("{}: {} exited 0 but printed no SVG ({} bytes{})", op, command, svg.size(),
         svg.empty() ? "" : fmt::format(", starting '{}'", svg.substr(0, 40)));
  return svg;
}

}  // namespace

std::string graph_dot(const Tensor& root) {
  if (!root.defined()) fail("graph_dot: undefined tensor");
  // A drawn node: an op (its Node), a leaf, or a constant input (the graph
  // keeps only its shape, so each use of a constant is a node of its own).
  struct Vertex {
    const Node* op = nullptr;
    const TensorImpl* leaf = nullptr;
    Shape shape;
  };
  std::unordered_map<const void*, size_t> id;  // Node or leaf -> its node number, in order of discovery
  std::vector<Vertex> vertices;
  std::vector<std::pair<size_t, size_t>> edges;  // (input, op)
  auto visit = [&](const void* key, Vertex v) {
    if (key != nullptr) {
      auto [it, fresh] = id.try_emplace(key, vertices.size());
      if (!fresh) return it->second;
    }
    vertices.push_back(std::move(v));
    return vertices.size() - 1;
  };
  const TensorImpl& r = *root.impl();
  if (r.grad_fn)
    visit(r.grad_fn.get(), {r.grad_fn.get(), nullptr, r.shape});
  else
    visit(&r, {nullptr, &r, r.shape});
  for (size_t i = 0; i < vertices.size(); ++i) {  // breadth-first: `vertices` grows as the walk finds inputs
    const Node* op = vertices[i].op;
    if (op == nullptr) continue;
    for (const Edge& e : op->edges) {
      if (e.node)
        edges.emplace_back(visit(e.node.get(), {e.node.get(), nullptr, e.node->shape}), i);
      else if (e.leaf)
        edges.emplace_back(visit(e.leaf.get(), {nullptr, e.leaf.get(), e.leaf->shape}), i);
      else if (e.constant)
        edges.emplace_back(visit(nullptr, {nullptr, nullptr, *e.constant}), i);
    }
  }

  std::string out = "digraph autograd {\n  rankdir=LR;\n  node [fontname=\"sans-serif\", fontsize=11];\n";
  for (size_t i = 0; i < vertices.size(); ++i) {
    const Vertex& v = vertices[i];
    std::string shape = dot_escape(v.shape.str());
    std::string root_mark = i == 0 ? ", peripheries=2" : "";
    if (v.op)
      out += fmt::format("  t{} [label=\"{}\\n{}\", shape=ellipse{}];\n", i, dot_escape(v.op->name), shape, root_mark);
    else if (v.leaf && v.leaf->requires_grad)
      out +=
          fmt::format("  t{} [label=\"leaf {}\\nrequires_grad\", shape=box, style=filled, fillcolor=\"#cfe2f3\"{}];\n",
                      i, shape, root_mark);
    else
      out += fmt::format("  t{} [label=\"leaf {}\", shape=box{}];\n", i, shape, root_mark);
  }
  for (auto [from, to] : edges) out += fmt::format("  t{} -> t{};\n", from, to);
  return out + "}\n";
}

GraphFiles save_graph(const std::filesystem::path& stem, const Tensor& root) {
  const char* op = "save_graph";
  if (!root.defined()) fail("{}: undefined tensor", op);
  GraphFiles files;
  files.dot = stem;
  files.dot += ".dot";
  detail::write_file(files.dot, graph_dot(root), op);

  std::string dot = find_on_path("dot");
  if (dot.empty()) return files;  // no Graphviz: the .dot file is all there is
  std::filesystem::path svg = stem;
  svg += ".svg";
  detail::write_file(svg, render_svg(dot, files.dot, op), op);
  files.svg = svg;
  return files;
}

}  // namespace qkv::viz
