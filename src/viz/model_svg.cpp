// viz::model_svg: a traced model as a block diagram of its data flow.
//
// Three passes:
//   1. edges: for every drawn module, which module's output (or which input
//      of the frame around it) each of its inputs came from, followed
//      through the ops between modules (TracedTensor::from);
//   2. layout: inside each frame the modules stand in rows by their depth in
//      that flow (a module one row below the deepest one it reads), so that
//      modules reading the same tensor (W_q, W_k, W_v) stand side by side;
//      sizes are measured bottom up and placed top down;
//   3. lines: an arrow from each row to the next, a line around the side
//      (a frame's gutter) for a tensor read rows later (a residual path) or
//      read back by an earlier module called again (a decoder's recurrence),
//      and a line between branches for a tensor from another branch (the
//      encoder's output into the decoder's cross-attention).
// The file is longer than most: the three passes share the picture's state,
// and splitting them would spread one layout over several files.
#include <qkv/core/error.hpp>
#include <qkv/viz/model_summary.hpp>
#include <qkv/viz/xml.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>

#include "viz/common.hpp"
#include "viz/model_tree.hpp"
#include "viz/svg.hpp"

namespace qkv::viz {
namespace {

constexpr double BOX_H = 42;  // a module drawn as one box
constexpr double MIN_BOX_W = 170;
constexpr double PAD = 12;     // inside a frame, around its boxes
constexpr double HEADER = 24;  // a frame's title line
constexpr double ARROW = 44;   // the gap between two rows, which the arrows cross
constexpr double GAP = 36;     // between two modules side by side
constexpr double LANE = 16;    // one side line's lane in a frame's gutter or between branches
constexpr double MARGIN = 20;
constexpr int IN = -1;   // an edge's end: the input of the frame it runs in
constexpr int OUT = -2;  // the frame's output

// A fill for each kind of block, as d2l colours its figure's blocks.
const char* fill_of(const std::string& type) {
  auto has = [&](const char* part) { return type.find(part) != std::string::npos; };
  if (has("Attention") || has("Attn")) return "#fde2c4";
  if (has("Norm")) return "#fff3b0";
  if (has("FFN") || has("Linear") || has("MLP") || has("Head")) return "#d6e8fa";
  if (has("Embedding")) return "#f8d7e3";
  if (has("Positional")) return "#e6dcf5";
  if (has("GRU") || has("RNN") || has("LSTM")) return "#d4f0d9";
  return "#eeeeee";
}

struct Rect {
  double x = 0, y = 0, w = 0, h = 0;
  double cx() const { return x + w / 2; }
  double cy() const { return y + h / 2; }
  double bottom() const { return y + h; }
  double right() const { return x + w; }
};

// A tensor flowing inside one frame: from one of its modules (or its input)
// to another (or its output).
struct Flow {
  int frame = 0;
  int from = IN;  // a node drawn in `frame`, or IN
  int port = 0;   // which of from's outputs (IN: which of the frame's inputs): one stem per port
  int to = OUT;   // a node drawn in `frame`, or OUT
  Shape shape;    // as it left `from`
  Shape read;     // as `to` read it (another shape after a reshape between them)
  enum Kind { NEXT, SKIP, LOOP } kind = NEXT;  // to the next row; rows further down; back up
};
// A tensor from another branch: `from` and `to` are drawn nodes in different frames.
struct Cross {
  int from = 0, port = 0, to = 0;
  Shape shape;
};

class Picture {
 public:
  Picture(const ModelTrace& trace, const ModelPictureOptions& opt)
      : tree_(detail::model_tree(trace, "model_svg")), opt_(opt) {
    const size_t n = tree_.nodes.size();
    visible_.assign(n, {});
    open_.assign(n, false);
    shown_.assign(n, false);
    size_.assign(n, {});
    rect_.assign(n, {});
    rank_.assign(n, 1);
    lanes_.assign(n, 0);
    crossing_.assign(n, 0);
    for (int v = 0; v < static_cast<int>(n); ++v)
      for (int c : node(v).calls) node_of_[c] = v;
    for (const ModuleCall& c : trace.calls)
      for (const auto* list : {&c.inputs, &c.outputs})
        for (const TracedTensor& t : *list) tensor_.try_emplace(t.id, &t);
    decide(0, true, false);
    for (int f = 0; f < static_cast<int>(n); ++f)
      if (open_[static_cast<size_t>(f)]) find_flows(f);
    for (int f = 0; f < static_cast<int>(n); ++f)
      if (open_[static_cast<size_t>(f)]) arrange(f);
    for (const Cross& x : crosses_) ++crossing_[static_cast<size_t>(std::max(0, node(x.from).parent))];
    measure(0);
    // The arrowhead's id, its own to this picture: a page that shows several
    // pictures inline has one id space, and a reference into a picture that
    // is hidden (a folded section) draws nothing in some browsers.
    uint32_t h = 2166136261u;  // FNV-1a of the title and the calls
    for (const ModuleCall& c : trace.calls)
      for (char ch : opt.title + c.name + c.type + detail::shapes_text(c.outputs))
        h = (h ^ static_cast<unsigned char>(ch)) * 16777619u;
    marker_ = fmt::format("qkv-arrow-{:08x}", h);
  }

  std::string svg() {
    const double title_h = opt_.title.empty() ? 0 : 28;
    const Rect& root = size_[0];
    const double width = std::max({root.w + 2 * MARGIN, detail::text_extent(opt_.title, 16) + 2 * MARGIN, 560.0});
    const std::vector<std::string> legend = detail::wrap_text(
        "Boxes: the modules that ran (type; name · parameters); hover one for its shapes; a dashed frame: a module "
        "whose forward opens no TraceScope. Arrows: the data flow, each labelled with the shape that left its "
        "module; modules side by side read the same tensors independently; the ops between modules (a reshape, a "
        "softmax outside any module) are not drawn, so lines join where one op reads several. Blue lines on the "
        "side: a tensor read again further on (a residual path) or back at the next call (a recurrence); brown "
        "lines: a tensor from another branch (the encoder's output). Dropout is left out.",
        width - 2 * MARGIN, 10.5);
    const double legend_h = 14 * static_cast<double>(legend.size()) + 6;
    const double height = MARGIN + title_h + root.h + ARROW + legend_h + MARGIN;
    std::string s = detail::svg_begin(width, height);
    s += fmt::format(
        "<defs><marker id=\"{}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
        "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#444\"/></marker></defs>\n",
        marker_);
    if (!opt_.title.empty()) s += detail::svg_text(width / 2, MARGIN + 16, opt_.title, {.size = 16, .cls = "title"});
    place(0, (width - root.w) / 2, MARGIN + title_h, s);
    for (const Flow& f : flows_) s += draw(f);
    for (size_t i = 0; i < crosses_.size(); ++i) s += draw(crosses_[i], static_cast<int>(i));
    // The model's output, below it.
    const Rect& r = rect_[0];
    const double ox = stem_x(0, 0);
    s += arrow_group({.from = call(0).name,
                      .to = "output",
                      .shape = first_float(call(0).outputs),
                      .path = fmt::format("M {0:.1f} {1:.1f} V {2:.1f}", ox, r.bottom(), r.bottom() + ARROW - 1),
                      .lx = ox + 6,
                      .ly = r.bottom() + ARROW / 2 + 4});
    double ly = r.bottom() + ARROW + 20;
    for (const std::string& line : legend) {
      s += detail::svg_text(MARGIN, ly, line, {.anchor = "start", .size = 10.5, .cls = "legend"});
      ly += 14;
    }
    return s + detail::svg_end();
  }

 private:
  const ModuleCall& call(int n) const { return tree_.call_of(n); }
  const ModuleCall& call_at(int c) const { return tree_.trace->calls[static_cast<size_t>(c)]; }
  const detail::ModelNode& node(int n) const { return tree_.nodes[static_cast<size_t>(n)]; }
  static Shape first_float(const std::vector<TracedTensor>& ts) {
    for (const TracedTensor& t : ts)
      if (!t.integer) return t.shape;
    return ts.empty() ? Shape{} : ts[0].shape;
  }

  // --- 1. which module reads which ---------------------------------------------------

  // Which nodes are drawn, and which of them are opened as frames.
  void decide(int n, bool shown, bool forced_box) {
    shown_[static_cast<size_t>(n)] = shown;
    for (int c : node(n).children)
      if (call(c).type != "Dropout") visible_[static_cast<size_t>(n)].push_back(c);
    const auto& kids = visible_[static_cast<size_t>(n)];
    open_[static_cast<size_t>(n)] = shown && !forced_box && !kids.empty() && call(n).depth < opt_.depth;
    // A list of blocks of one type: the first opened, the others one box each.
    const bool same_blocks =
        call(n).type == "ModuleList" && kids.size() >= 2 &&
        std::all_of(kids.begin(), kids.end(), [&](int c) { return call(c).type == call(kids[0]).type; });
    for (size_t i = 0; i < kids.size(); ++i) decide(kids[i], open_[static_cast<size_t>(n)], same_blocks && i > 0);
  }

  int drawn(int n) const {  // the nearest drawn node at or above n
    while (!shown_[static_cast<size_t>(n)]) n = node(n).parent;
    return n;
  }
  bool is_above(int a, int b) const {  // a is b or one of its ancestors
    for (; b >= 0; b = node(b).parent)
      if (a == b) return true;
    return false;
  }
  int child_toward(int frame, int n) const {  // the child of `frame` that holds n
    while (node(n).parent != frame) n = node(n).parent;
    return n;
  }
  static int position(const std::vector<TracedTensor>& ts, int id) {
    for (size_t i = 0; i < ts.size(); ++i)
      if (ts[i].id == id) return static_cast<int>(i);
    return -1;
  }
  // Where tensor `id` leaves node n: its position in the outputs of one of n's calls.
  int out_port(int n, int id) const {
    for (int c : node(n).calls)
      if (int p = position(call_at(c).outputs, id); p >= 0) return p;
    return 0;
  }

  // Where tensor `id`, read by node t inside `frame`, came from: each end
  // found is handed to `found(kind, node, port, id)`, kind 'i' (the
  // frame's input), 'k' (a module of the frame) or 'x' (another branch).
  // `seen`: the tensors already followed from this read (each once, so a
  // trace made by hand whose `from` lists go round in a circle ends).
  template <class Found>
  void resolve(int frame, int t, int id, std::set<int>& seen, const Found& found) const {
    if (!seen.insert(id).second) return;
    for (int c : node(frame).calls)
      if (int p = position(call_at(c).inputs, id); p >= 0) return found('i', frame, p, id);
    // The outermost module that returned it (MultiHeadAttention before its W_o),
    // that is not t itself or around it.
    int producer = -1;
    // (For the frame's own output, t is OUT_PROBE: a module inside the frame.)
    const int reader = t == OUT_PROBE ? frame : t;
    for (int c = 0; c < static_cast<int>(tree_.trace->calls.size()) && producer < 0; ++c) {
      const bool passes_through = call_at(c).type == "Dropout" && position(call_at(c).inputs, id) >= 0;  // at eval
      if (position(call_at(c).outputs, id) >= 0 && !passes_through && !is_above(node_of_.at(c), reader)) producer = c;
    }
    if (producer >= 0) {
      const int m = node_of_.at(producer);
      if (call_at(producer).type == "Dropout") {  // not drawn: where its input came from
        for (const TracedTensor& in : call_at(producer).inputs) resolve(frame, t, in.id, seen, found);
        return;
      }
      if (t != OUT_PROBE && is_above(t, m)) return;  // t's own output read by its next call: a loop in one box
      if (m != frame && is_above(frame, m)) return found('k', child_toward(frame, m), out_port(m, id), id);
      if (!is_above(frame, m)) return found('x', m, out_port(m, id), id);
    }
    for (int up = node(frame).parent; up >= 0; up = node(up).parent)
      for (int c : node(up).calls)
        if (position(call_at(c).inputs, id) >= 0) return found('i', frame, 0, id);
    if (auto it = tensor_.find(id); it != tensor_.end())
      for (int source : it->second->from) resolve(frame, t, source, seen, found);
  }

  // The calls of node n and of every node below it.
  void calls_under(int n, std::vector<int>& out) const {
    out.insert(out.end(), node(n).calls.begin(), node(n).calls.end());
    for (int c : node(n).children) calls_under(c, out);
  }

  // The tensors each module drawn in `frame` read, and the frame's outputs.
  // A module drawn as one box also reads what the modules inside it read
  // from outside it (a later decoder block's cross-attention reads the
  // encoder's output, which is no input of the block).
  void find_flows(int frame) {
    for (int t : visible_[static_cast<size_t>(frame)]) {
      std::vector<int> reads = node(t).calls;
      if (!open_[static_cast<size_t>(t)])
        for (int c : node(t).children) calls_under(c, reads);
      for (int c : reads) {
        // Float tensors; token ids and valid lengths only where nothing else flows (into an Embedding).
        std::vector<TracedTensor> ins;
        for (const TracedTensor& in : call_at(c).inputs)
          if (!in.integer) ins.push_back(in);
        const bool own = node_of_.at(c) == t;
        if (ins.empty() && own && !call_at(c).inputs.empty()) ins.push_back(call_at(c).inputs[0]);
        for (const TracedTensor& in : ins) {
          std::set<int> seen;
          resolve(frame, t, in.id, seen, [&](char kind, int from, int port, int id) {
            const Shape& shape = tensor_.at(id)->shape;
            if (kind == 'x')
              add_cross({drawn(from), port, t, shape});
            else
              add_flow({frame, kind == 'i' ? IN : from, port, t, shape, in.shape});
          });
        }
      }
    }
    const ModuleCall& self = call(frame);
    for (const TracedTensor& o : self.outputs) {
      if (o.integer) continue;
      std::set<int> seen;
      resolve(frame, OUT_PROBE, o.id, seen, [&](char kind, int from, int port, int id) {
        if (kind == 'k') add_flow({frame, from, port, OUT, tensor_.at(id)->shape, o.shape});
      });
    }
  }
  // resolve()'s t for the frame's own output: no node is above it.
  static constexpr int OUT_PROBE = -1000;

  void add_flow(const Flow& f) {
    if (f.from == f.to) return;
    for (const Flow& g : flows_)
      if (g.frame == f.frame && g.from == f.from && g.port == f.port && g.to == f.to) return;
    flows_.push_back(f);
  }
  void add_cross(const Cross& x) {
    if (is_above(x.from, x.to) || is_above(x.to, x.from)) return;
    for (const Cross& y : crosses_)
      if (y.from == x.from && y.port == x.port && y.to == x.to) return;
    crosses_.push_back(x);
  }

  // --- 2. layout ---------------------------------------------------------------------

  // The rows of `frame`: each module one row below the deepest module it
  // reads; modules that ran later but are read by an earlier one (a
  // recurrence) do not push it down. Then which lines run around the side.
  void arrange(int frame) {
    const auto& kids = visible_[static_cast<size_t>(frame)];
    auto first_call = [&](int n) { return n == IN ? -1 : node(n).calls.front(); };
    for (int t : kids)  // kids are in the order they first ran: each one's sources are ranked before it
      for (const Flow& f : flows_)
        if (f.frame == frame && f.to == t && first_call(f.from) < first_call(t))
          rank_[static_cast<size_t>(t)] =
              std::max(rank_[static_cast<size_t>(t)], (f.from == IN ? 0 : rank_[static_cast<size_t>(f.from)]) + 1);
    int rows = 0;
    for (int t : kids) rows = std::max(rows, rank_[static_cast<size_t>(t)]);
    auto rank = [&](int n) { return n == IN ? 0 : n == OUT ? rows + 1 : rank_[static_cast<size_t>(n)]; };
    for (Flow& f : flows_) {
      if (f.frame != frame) continue;
      if (f.to != OUT && f.from != IN && first_call(f.from) > first_call(f.to))
        f.kind = Flow::LOOP;
      else if (rank(f.to) > rank(f.from) + 1)
        f.kind = Flow::SKIP;
      if (f.kind != Flow::NEXT) ++lanes_[static_cast<size_t>(frame)];
    }
  }

  std::vector<std::vector<int>> rows_of(int frame) const {
    std::vector<std::vector<int>> rows;
    for (int t : visible_[static_cast<size_t>(frame)]) {
      const size_t r = static_cast<size_t>(rank_[static_cast<size_t>(t)]);
      if (rows.size() < r) rows.resize(r);
      rows[r - 1].push_back(t);
    }
    std::erase_if(rows, [](const std::vector<int>& row) { return row.empty(); });
    return rows;
  }

  std::string header(int n) const {
    const ModuleCall& c = call(n);
    const auto& kids = visible_[static_cast<size_t>(n)];
    std::string type = c.type;
    if (c.type == "ModuleList" && !kids.empty()) type = fmt::format("{} × {}", kids.size(), call(kids[0]).type);
    std::string s = n == 0 ? type : detail::short_name(c.name) + ": " + type;
    if (!c.note.empty()) s += " (" + c.note + ")";
    s += " · " + detail::count_text(c.parameters) + " parameters";
    if (node(n).count > 1) s += fmt::format(" · × {} calls", node(n).count);
    return s;
  }
  std::string box_line1(int n) const {
    const ModuleCall& c = call(n);
    const std::string type = c.note.empty() ? c.type : c.type + " (" + c.note + ")";
    return node(n).count > 1 ? fmt::format("{} × {}", type, node(n).count) : type;
  }
  std::string box_line2(int n) const {
    const ModuleCall& c = call(n);
    return (n == 0 ? std::string("model") : detail::short_name(c.name)) + " · " + detail::count_text(c.parameters) +
           " params";
  }
  double gutter(int n) const {
    return lanes_[static_cast<size_t>(n)] > 0 ? 8 + LANE * lanes_[static_cast<size_t>(n)] : 0;
  }
  double gap(int n) const { return GAP + LANE * crossing_[static_cast<size_t>(n)]; }

  void measure(int n) {
    Rect& r = size_[static_cast<size_t>(n)];
    if (!open_[static_cast<size_t>(n)]) {
      r.w = std::max(MIN_BOX_W,
                     24 + std::max(detail::text_extent(box_line1(n), 12.5), detail::text_extent(box_line2(n), 10.5)));
      r.h = BOX_H;
      return;
    }
    for (int c : visible_[static_cast<size_t>(n)]) measure(c);
    double w = 0, h = 0;
    for (const std::vector<int>& row : rows_of(n)) {
      double rw = gap(n) * static_cast<double>(row.size() - 1), rh = 0;
      for (int c : row) {
        rw += size_[static_cast<size_t>(c)].w;
        rh = std::max(rh, size_[static_cast<size_t>(c)].h);
      }
      w = std::max(w, rw);
      h += ARROW + rh;  // the arrows into the row, then the row
    }
    const double head = detail::text_extent(header(n), 12) + 2 * PAD;
    r.w = std::max(w + gutter(n) + 2 * PAD, head);
    r.h = HEADER + h + PAD + (merges(n) ? ARROW / 2 : 0);
  }

  // Node n with its top left corner at (x, y): its box, or its frame and what it holds.
  void place(int n, double x, double y, std::string& s) {
    Rect& r = rect_[static_cast<size_t>(n)];
    r = size_[static_cast<size_t>(n)];
    r.x = x;
    r.y = y;
    s += module_group(n);
    const ModuleCall& c = call(n);
    if (!open_[static_cast<size_t>(n)]) {
      s += fmt::format(
          "<rect class=\"box\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"6\" fill=\"{}\" "
          "stroke=\"#555\"/>\n",
          r.x, r.y, r.w, r.h, fill_of(c.type));
      s += detail::svg_text(r.cx(), r.y + 18, box_line1(n), {.size = 12.5, .cls = "type"});
      s += detail::svg_text(r.cx(), r.y + 34, box_line2(n), {.size = 10.5, .cls = "name"});
      s += "</g>\n";
      return;
    }
    s += fmt::format(
        "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"8\" fill=\"{}\" "
        "fill-opacity=\"0.25\" stroke=\"#888\" stroke-dasharray=\"{}\"/>\n",
        r.x, r.y, r.w, r.h, fill_of(c.type), c.traced ? "none" : "4 3");
    s += detail::svg_text(r.x + PAD, r.y + 17, header(n), {.anchor = "start", .size = 12, .cls = "header"});
    s += "</g>\n";
    // Each row centred in the frame's inner width (the gutter on the right).
    const double inner = r.w - 2 * PAD - gutter(n);
    double cy = r.y + HEADER;
    for (const std::vector<int>& row : rows_of(n)) {
      double rw = gap(n) * static_cast<double>(row.size() - 1), rh = 0;
      for (int k : row) {
        rw += size_[static_cast<size_t>(k)].w;
        rh = std::max(rh, size_[static_cast<size_t>(k)].h);
      }
      double cx = r.x + PAD + (inner - rw) / 2;
      for (int k : row) {
        place(k, cx, cy + ARROW, s);
        cx += size_[static_cast<size_t>(k)].w + gap(n);
      }
      cy += ARROW + rh;
    }
  }

  // <g class="module" …> with the shapes in its <title>, which a browser
  // shows on hover, and in data- attributes.
  std::string module_group(int n) const {
    const ModuleCall& c = call(n);
    std::string tip = fmt::format("{}{}", c.name.empty() ? "" : c.name + ": ", c.type);
    if (!c.extra.empty()) tip += "(" + c.extra + ")";
    if (!c.note.empty()) tip += ", " + c.note;
    tip += fmt::format("\nin: {}\nout: {}\nparameters: {}", detail::shapes_text(c.inputs),
                       detail::shapes_text(c.outputs), detail::count_text(c.parameters));
    if (node(n).count > 1) tip += fmt::format("\ncalled {} times (the shapes of the first call)", node(n).count);
    // A box with modules inside: theirs too (a multi-head attention's heads, as a batch of B·h).
    if (!open_[static_cast<size_t>(n)]) inside(n, 1, tip);
    return fmt::format(
        "<g class=\"module\" data-name=\"{}\" data-type=\"{}\" data-params=\"{}\" data-depth=\"{}\" "
        "data-calls=\"{}\" data-inputs=\"{}\" data-outputs=\"{}\" data-note=\"{}\">\n<title>{}</title>\n",
        xml_escape(c.name), xml_escape(c.type), c.parameters, c.depth, node(n).count,
        xml_escape(detail::shapes_text(c.inputs)), xml_escape(detail::shapes_text(c.outputs)), xml_escape(c.note),
        xml_escape(tip));
  }

  // One line per module below n (Dropout too: the table lists it), indented by depth.
  void inside(int n, int level, std::string& tip) const {
    for (int c : node(n).children) {
      const ModuleCall& k = call(c);
      tip += fmt::format("\n{:{}}{}: {}{} {} -> {}", "", 2 * level, detail::short_name(k.name), k.type,
                         k.note.empty() ? "" : ", " + k.note, detail::shapes_text(k.inputs),
                         detail::shapes_text(k.outputs));
      inside(c, level + 1, tip);
    }
  }

  // --- 3. lines ----------------------------------------------------------------------

  // Whether the frame's output is computed from several of its modules'
  // outputs (softmax(Q·Kᵀ)·V outside any module): their lines join below them.
  bool merges(int frame) const {
    std::set<int> sources;
    for (const Flow& f : flows_)
      if (f.frame == frame && f.to == OUT) sources.insert(f.from);
    return sources.size() >= 2;
  }
  double inner_cx(int frame) const {
    const Rect& r = rect_[static_cast<size_t>(frame)];
    return r.x + PAD + (r.w - 2 * PAD - gutter(frame)) / 2;
  }

  // Where port `port` of n leaves its bottom: the middle, or spread when
  // several of its outputs go their own ways; a frame's output leaves below
  // the module inside that made it.
  double stem_x(int n, int port) const {
    const Rect& r = rect_[static_cast<size_t>(n)];
    if (open_[static_cast<size_t>(n)]) {
      if (merges(n)) return inner_cx(n);
      for (const Flow& f : flows_)
        if (f.frame == n && f.to == OUT && f.kind == Flow::NEXT) return stem_x(f.from, f.port);
      return inner_cx(n);
    }
    std::set<int> ports;
    for (const Flow& f : flows_)
      if (f.from == n) ports.insert(f.port);
    for (const Cross& x : crosses_)
      if (x.from == n) ports.insert(x.port);
    if (ports.size() <= 1) return r.cx();
    const auto at = static_cast<double>(std::distance(ports.begin(), ports.find(port)));
    return r.x + r.w * (at + 1) / (static_cast<double>(ports.size()) + 1);
  }
  // Where flow f enters the top of its module: spread over the flows coming from the row above.
  double entry_x(const Flow& f) const {
    std::vector<double> from;
    for (const Flow& g : flows_)
      if (g.frame == f.frame && g.to == f.to && g.kind == Flow::NEXT) from.push_back(start_x(g));
    std::sort(from.begin(), from.end());
    const Rect& r = rect_[static_cast<size_t>(f.to)];
    const auto at = static_cast<double>(std::find(from.begin(), from.end(), start_x(f)) - from.begin());
    return r.x + r.w * (at + 1) / (static_cast<double>(from.size()) + 1);
  }
  // Where flow f leaves: its module's stem; for the frame's input, straight
  // above the first module that reads that input.
  double start_x(const Flow& f) const {
    if (f.from != IN) return stem_x(f.from, f.port);
    const Flow* first = nullptr;
    for (const Flow& g : flows_)
      if (!first && g.frame == f.frame && g.from == IN && g.port == f.port && g.kind == Flow::NEXT) first = &g;
    if (!first) return inner_cx(f.frame);
    const Rect& r = rect_[static_cast<size_t>(first->to)];
    int n = 0, at = 0;
    for (const Flow& g : flows_)
      if (g.frame == f.frame && g.to == first->to && g.kind == Flow::NEXT) {
        if (&g == first) at = n;
        ++n;
      }
    return r.x + r.w * (at + 1) / (n + 1);
  }
  double bottom_of(int frame, int n) const {  // where n's lines start: its bottom, or the frame's inside top
    return n == IN ? rect_[static_cast<size_t>(frame)].y + HEADER : rect_[static_cast<size_t>(n)].bottom();
  }
  // The bottom of the row n stands in (lines around the side leave just below it).
  double row_bottom(int frame, int n) const {
    if (n == IN) return bottom_of(frame, IN);
    double b = 0;
    for (int k : visible_[static_cast<size_t>(frame)])
      if (rank_[static_cast<size_t>(k)] == rank_[static_cast<size_t>(n)])
        b = std::max(b, rect_[static_cast<size_t>(k)].bottom());
    return b;
  }
  bool leftmost(int frame, int n) const {
    for (int k : visible_[static_cast<size_t>(frame)])
      if (k != n && rank_[static_cast<size_t>(k)] == rank_[static_cast<size_t>(n)] &&
          rect_[static_cast<size_t>(k)].x < rect_[static_cast<size_t>(n)].x)
        return false;
    return true;
  }
  bool rightmost(int frame, int n) const {
    for (int k : visible_[static_cast<size_t>(frame)])
      if (k != n && rank_[static_cast<size_t>(k)] == rank_[static_cast<size_t>(n)] &&
          rect_[static_cast<size_t>(k)].x > rect_[static_cast<size_t>(n)].x)
        return false;
    return true;
  }

  // Where an arrow's label stands (0.6 em a character; 0.8 em above the baseline, 0.2 em below).
  struct Label {
    double x0, y0, x1, y1;
    std::string text;
  };
  static Label label_box(double x, double y, const std::string& text, const std::string& anchor) {
    const double w = detail::text_extent(text, 10.5);
    const double x0 = anchor == "end" ? x - w : x;
    return {x0, y - 0.8 * 10.5, x0 + w, y + 0.2 * 10.5, text};
  }
  const Label* overlap(const Label& a) const {
    for (const Label& b : labels_)
      if (a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1) return &b;
    return nullptr;
  }

  // One line of the picture as a <g class="flow|skip|loop|cross"> whose
  // data- attributes say what it carries, for tests and stylesheets.
  struct Arrow {
    const char* cls = "flow";
    std::string frame{}, from{}, to{};  // frame: the module it runs inside ("" for the model, or between branches)
    int port = 0;
    Shape shape{};                // as it left `from`
    const Shape* read = nullptr;  // as `to` read it
    std::string path{};
    double lx = 0, ly = 0;         // the label's anchor
    const char* anchor = "start";  // of the label
    bool rotate = false, label = true, head = true;
  };
  std::string arrow_group(const Arrow& a) const {
    const std::string text = fmt::format("{}", a.shape);
    std::string s = fmt::format(
        "<g class=\"{}\" data-frame=\"{}\" data-from=\"{}\" data-port=\"{}\" data-to=\"{}\" data-shape=\"{}\"", a.cls,
        xml_escape(a.frame), xml_escape(a.from), a.port, xml_escape(a.to), xml_escape(text));
    if (a.read) s += fmt::format(" data-read=\"{}\"", xml_escape(fmt::format("{}", *a.read)));
    s += ">\n";
    const std::string cls = a.cls;
    const char* colour = cls == "cross" ? "#b05a2a" : cls == "flow" ? "#444" : "#2a7ab0";
    s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.3\"{}/>\n", a.path, colour,
                     a.head ? fmt::format(" marker-end=\"url(#{})\"", marker_) : "");
    if (a.label)
      s += detail::svg_text(
          a.lx, a.ly, text,
          {.anchor = a.rotate ? "middle" : a.anchor, .size = 10.5, .rotate = a.rotate ? -90.0 : 0.0, .cls = "shape"});
    return s + "</g>\n";
  }

  std::string draw(const Flow& f) {
    const int frame = f.frame;
    const Rect& fr = rect_[static_cast<size_t>(frame)];
    const std::string from = f.from == IN ? "input" : call(f.from).name;
    const std::string to = f.to == OUT ? "output" : call(f.to).name;
    const double sx = start_x(f), sy = bottom_of(frame, f.from);
    if (f.kind == Flow::NEXT && f.to == OUT) {  // joins the frame's own arrow out, below it
      const double join = fr.bottom() - PAD - ARROW / 4;
      const std::string path = merges(frame) ? fmt::format("M {:.1f} {:.1f} V {:.1f} H {:.1f} V {:.1f}", sx, sy, join,
                                                           stem_x(frame, 0), fr.bottom())
                                             : fmt::format("M {:.1f} {:.1f} V {:.1f}", sx, sy, fr.bottom());
      return arrow_group({.frame = call(frame).name,
                          .from = from,
                          .to = to,
                          .port = f.port,
                          .shape = f.shape,
                          .read = &f.read,
                          .path = path,
                          .label = false,
                          .head = false});
    }
    if (f.kind == Flow::NEXT) {
      const Rect& t = rect_[static_cast<size_t>(f.to)];
      const double ex = entry_x(f), mid = row_bottom(frame, f.from) + ARROW / 2;
      // One label per stem: the first flow that leaves it. Right of the stem;
      // left of it where another label stands there; none where the same
      // shape is written there already (two inputs of one add, side by side).
      bool first = true;
      for (const Flow& g : flows_)
        if (&g == &f)
          break;
        else if (g.frame == frame && g.from == f.from && g.port == f.port && g.kind == Flow::NEXT && start_x(g) == sx)
          first = false;
      const std::string text = fmt::format("{}", f.shape);
      const char* anchor = "start";
      double lx = sx + 5;
      if (first) {
        const Label right = label_box(lx, mid - 6, text, "start"), left = label_box(sx - 5, mid - 6, text, "end");
        if (const Label* other = overlap(right); other && other->text == text) {
          first = false;
        } else if (other && !overlap(left)) {
          anchor = "end";
          lx = sx - 5;
          labels_.push_back(left);
        } else {
          labels_.push_back(right);
        }
      }
      return arrow_group({.frame = call(frame).name,
                          .from = from,
                          .to = to,
                          .port = f.port,
                          .shape = f.shape,
                          .read = &f.read,
                          .path = fmt::format("M {:.1f} {:.1f} V {:.1f} H {:.1f} V {:.1f}", sx, sy, mid, ex, t.y - 1),
                          .lx = lx,
                          .ly = mid - 6,
                          .anchor = anchor,
                          .label = first});
    }
    // Around the side, in a lane of the frame's gutter.
    const double lane = fr.right() - PAD - gutter(frame) + 8 + LANE * static_cast<double>(used_[frame]++) + 4;
    const double leave = row_bottom(frame, f.from) + 4;
    std::string path = fmt::format("M {:.1f} {:.1f} V {:.1f} H {:.1f}", sx, sy, leave, lane);
    double arrive;
    if (f.to == OUT) {
      arrive = fr.bottom() - 6;
      path += fmt::format(" V {:.1f} H {:.1f} V {:.1f}", arrive, stem_x(frame, 0), fr.bottom());
    } else {
      const Rect& t = rect_[static_cast<size_t>(f.to)];
      if (rightmost(frame, f.to)) {
        arrive = t.cy();
        path += fmt::format(" V {:.1f} H {:.1f}", arrive, t.right() + 1);
      } else {  // through the gap above its row, into its top
        arrive = t.y - 8;
        path += fmt::format(" V {:.1f} H {:.1f} V {:.1f}", arrive, t.x + t.w - 12, t.y - 1);
      }
    }
    return arrow_group({.cls = f.kind == Flow::LOOP ? "loop" : "skip",
                        .frame = call(frame).name,
                        .from = from,
                        .to = to,
                        .port = f.port,
                        .shape = f.shape,
                        .read = &f.read,
                        .path = path,
                        .lx = lane + 4,
                        .ly = (leave + arrive) / 2,
                        .rotate = true,
                        .head = f.to != OUT});
  }

  // From another branch: out of the source's right side, through the gap
  // beside it, into the target's left side (or its right, when the target
  // does not stand to the right of the source).
  std::string draw(const Cross& x, int i) {
    const Rect& a = rect_[static_cast<size_t>(x.from)];
    const Rect& b = rect_[static_cast<size_t>(x.to)];
    // Its lane among the lines leaving the same frame, its height among the lines into the same module.
    int lane_at = 0, into = 0, into_at = 0;
    for (int j = 0; j < static_cast<int>(crosses_.size()); ++j) {
      const Cross& y = crosses_[static_cast<size_t>(j)];
      if (j < i && node(y.from).parent == node(x.from).parent) ++lane_at;
      if (y.to == x.to) {
        if (j < i) ++into_at;
        ++into;
      }
    }
    const double sy = a.bottom() - 12 - 6 * static_cast<double>(x.port);
    const bool beside = b.x > a.right();
    const double lane = (beside ? a.right() : std::max(a.right(), b.right())) + 14 + LANE * lane_at;
    std::string path = fmt::format("M {:.1f} {:.1f} H {:.1f}", a.right(), sy, lane);
    double ly = 0;
    const int frame = node(x.to).parent;
    if (beside && frame >= 0 && !leftmost(frame, x.to)) {  // a module stands left of it: through the gap above
      const double hy = b.y - 6 - 12 * static_cast<double>(into - 1 - into_at);
      path += fmt::format(" V {:.1f} H {:.1f} V {:.1f}", hy, b.x + 10 + 8 * static_cast<double>(into_at), b.y - 1);
      ly = hy - 3;
    } else {
      ly = b.y + b.h * (into_at + 1) / (into + 1);
      path += fmt::format(" V {:.1f} H {:.1f}", ly, beside ? b.x - 1 : b.right() + 1);
      ly -= 4;
    }
    return arrow_group({.cls = "cross",
                        .from = call(x.from).name,
                        .to = call(x.to).name,
                        .port = x.port,
                        .shape = x.shape,
                        .path = path,
                        .lx = beside ? b.x - 4 : lane + 4,
                        .ly = ly,
                        .anchor = beside ? "end" : "start"});
  }

  detail::ModelTree tree_;
  ModelPictureOptions opt_;
  std::map<int, int> node_of_;                 // call -> the node it was merged into
  std::map<int, const TracedTensor*> tensor_;  // id -> where it was first recorded
  std::vector<std::vector<int>> visible_;      // each node's children that are drawn (all but Dropout)
  std::vector<bool> open_, shown_;
  std::vector<Rect> size_, rect_;
  std::vector<int> rank_;      // a node's row in its frame, from 1
  std::vector<int> lanes_;     // lines around the side of each frame
  std::vector<int> crossing_;  // lines between branches leaving the modules of each frame
  std::map<int, int> used_;
  std::vector<Flow> flows_;
  std::vector<Cross> crosses_;
  std::vector<Label> labels_;  // the arrows' labels placed so far
  std::string marker_;         // the arrowhead's id
};

}  // namespace

std::string model_svg(const ModelTrace& trace, const ModelPictureOptions& opt) {
  if (opt.depth < 1) fail("model_svg: depth {} must be at least 1 (the model's own submodules)", opt.depth);
  return Picture(trace, opt).svg();
}

void save_model_svg(const std::filesystem::path& file, const ModelTrace& trace, const ModelPictureOptions& opt) {
  detail::write_file(file, model_svg(trace, opt), "save_model_svg");
}

}  // namespace qkv::viz
