// viz::model_svg: a traced model as a block diagram. Measured first (every
// node's size, bottom up), then placed (top down), then the lines that do
// not follow the order of the boxes (residual paths, the encoder's output
// into the decoder) drawn between the placed boxes.
#include <qkv/core/error.hpp>
#include <qkv/viz/model_summary.hpp>
#include <qkv/viz/xml.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <map>

#include "viz/common.hpp"
#include "viz/model_tree.hpp"
#include "viz/svg.hpp"

namespace qkv::viz {
namespace {

constexpr double BOX_H = 42;  // a module drawn as one box
constexpr double MIN_BOX_W = 170;
constexpr double PAD = 12;     // inside a frame, around its boxes
constexpr double HEADER = 24;  // a frame's title line
constexpr double ARROW = 34;   // the gap an arrow crosses between two boxes
constexpr double LANE = 16;    // one side line's lane in a frame's gutter or between columns
constexpr double MARGIN = 20;

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
  double bottom() const { return y + h; }
  double right() const { return x + w; }
};

// A line that is not an arrow between two boxes in a row.
struct Side {
  int from = -1;  // a node; or, with from_input, the frame whose input is read again
  bool from_input = false;
  int to = -1;
  int frame = -1;  // the frame whose gutter it runs in (a skip); -1: between columns (from another branch)
  std::string shape;
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
    lanes_.assign(n, 0);
    decide(0, true, false);
    columns_ = open_[0] && visible_[0].size() >= 2 && std::all_of(visible_[0].begin(), visible_[0].end(), [&](int c) {
                 return open_[static_cast<size_t>(c)];
               });
    find_sides();
    measure(0);
  }

  std::string svg() {
    const double title_h = opt_.title.empty() ? 0 : 28;
    const Rect& root = size_[0];
    // As wide as the model, its title, and a legend of a few lines.
    const double width = std::max({root.w + 2 * MARGIN, detail::text_extent(opt_.title, 16) + 2 * MARGIN, 560.0});
    const std::vector<std::string> legend = detail::wrap_text(
        "Boxes: the modules that ran (type; name · parameters); a dashed frame: a module whose forward opens no "
        "TraceScope. Arrows: the order they ran in, with the shapes that flowed. Lines on the side: a tensor read "
        "again further on (a residual path), or coming from another branch. Dropout is left out.",
        width - 2 * MARGIN, 10.5);
    const double legend_h = 14 * static_cast<double>(legend.size()) + 6;
    const double height = MARGIN + title_h + root.h + ARROW + legend_h + MARGIN;
    std::string s = detail::svg_begin(width, height);
    s += "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
         "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#444\"/></marker></defs>\n";
    if (!opt_.title.empty()) s += detail::svg_text(width / 2, MARGIN + 16, opt_.title, {.size = 16, .cls = "title"});
    place(0, (width - root.w) / 2, MARGIN + title_h, s);
    // The model's output, below its frame.
    const Rect& r = rect_[0];
    const int last = last_column();
    const double ox = last >= 0 ? rect_[static_cast<size_t>(last)].cx() : r.x + PAD + (r.w - 2 * PAD - gutter(0)) / 2;
    s += flow(ox, r.bottom(), r.bottom() + ARROW, 0, -1, tree_.call_of(0).outputs);
    for (const Side& side : sides_) s += draw(side);
    double ly = r.bottom() + ARROW + 20;
    for (const std::string& line : legend) {
      s += detail::svg_text(MARGIN, ly, line, {.anchor = "start", .size = 10.5, .cls = "legend"});
      ly += 14;
    }
    return s + detail::svg_end();
  }

 private:
  const ModuleCall& call(int node) const { return tree_.call_of(node); }
  const detail::ModelNode& node(int n) const { return tree_.nodes[static_cast<size_t>(n)]; }

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

  // The nearest drawn node at or above n.
  int drawn(int n) const {
    while (!shown_[static_cast<size_t>(n)]) n = node(n).parent;
    return n;
  }
  bool is_above(int a, int b) const {  // a is b or one of its ancestors
    for (; b >= 0; b = node(b).parent)
      if (a == b) return true;
    return false;
  }
  static bool holds(const std::vector<TracedTensor>& ts, int id) {
    return std::any_of(ts.begin(), ts.end(), [&](const TracedTensor& t) { return t.id == id; });
  }

  void find_sides() {
    for (int t = 1; t < static_cast<int>(tree_.nodes.size()); ++t) {
      if (call(t).type == "Dropout") continue;
      const int p = node(t).parent;
      const auto& kids = visible_[static_cast<size_t>(p)];
      const auto at = std::find(kids.begin(), kids.end(), t);
      const size_t idx = static_cast<size_t>(at - kids.begin());
      std::vector<int> seen;
      for (const TracedTensor& in : call(t).inputs) {
        if (in.integer || std::count(seen.begin(), seen.end(), in.id)) continue;
        seen.push_back(in.id);
        if (idx > 0 && holds(call(kids[idx - 1]).outputs, in.id)) continue;  // the arrow from the box above
        if (holds(call(p).inputs, in.id)) {
          if (idx > 0 && shown_[static_cast<size_t>(t)]) add({p, true, t, p, fmt::format("{}", in.shape)});
          continue;
        }
        bool sibling = false;
        for (size_t k = 0; k + 1 < idx; ++k)
          if (holds(call(kids[k]).outputs, in.id)) {
            if (shown_[static_cast<size_t>(t)]) add({kids[k], false, t, p, fmt::format("{}", in.shape)});
            sibling = true;
            break;
          }
        if (sibling) continue;
        // From elsewhere: the outermost module that returned it.
        int from = -1;
        for (int m = 0; m < static_cast<int>(tree_.nodes.size()); ++m)
          if (holds(call(m).outputs, in.id) && !is_above(m, t) && (from < 0 || call(m).depth < call(from).depth))
            from = m;
        if (from < 0) continue;
        const int a = drawn(from), b = drawn(t);
        if (is_above(a, b) || is_above(b, a)) continue;
        add({a, false, b, -1, fmt::format("{}", in.shape)});
      }
    }
  }
  void add(Side side) {
    for (const Side& s : sides_)
      if (s.from == side.from && s.from_input == side.from_input && s.to == side.to) return;
    if (side.frame >= 0)
      ++lanes_[static_cast<size_t>(side.frame)];
    else
      ++cross_lanes_;
    sides_.push_back(std::move(side));
  }

  std::string header(int n) const {
    const ModuleCall& c = call(n);
    const auto& kids = visible_[static_cast<size_t>(n)];
    std::string type = c.type;
    if (c.type == "ModuleList" && !kids.empty()) type = fmt::format("{} × {}", kids.size(), call(kids[0]).type);
    std::string s = n == 0 ? type : detail::short_name(c.name) + ": " + type;
    s += " · " + detail::count_text(c.parameters) + " parameters";
    if (node(n).count > 1) s += fmt::format(" · × {} calls", node(n).count);
    return s;
  }
  std::string box_line1(int n) const {
    const ModuleCall& c = call(n);
    return node(n).count > 1 ? fmt::format("{} × {}", c.type, node(n).count) : c.type;
  }
  std::string box_line2(int n) const {
    const ModuleCall& c = call(n);
    return (n == 0 ? std::string("model") : detail::short_name(c.name)) + " · " + detail::count_text(c.parameters) +
           " params";
  }
  double gutter(int n) const {
    return lanes_[static_cast<size_t>(n)] > 0 ? 8 + LANE * lanes_[static_cast<size_t>(n)] : 0;
  }
  double column_gap() const { return 60 + LANE * cross_lanes_; }

  void measure(int n) {
    Rect& r = size_[static_cast<size_t>(n)];
    const auto& kids = visible_[static_cast<size_t>(n)];
    if (!open_[static_cast<size_t>(n)]) {
      r.w = std::max(MIN_BOX_W,
                     24 + std::max(detail::text_extent(box_line1(n), 12.5), detail::text_extent(box_line2(n), 10.5)));
      r.h = BOX_H;
      return;
    }
    for (int c : kids) measure(c);
    double w = 0, h = 0;
    if (n == 0 && columns_) {
      for (int c : kids) w += size_[static_cast<size_t>(c)].w;
      w += column_gap() * static_cast<double>(kids.size() - 1);
      for (int c : kids) h = std::max(h, size_[static_cast<size_t>(c)].h);
      h += ARROW;
    } else {
      for (int c : kids) w = std::max(w, size_[static_cast<size_t>(c)].w);
      for (int c : kids) h += size_[static_cast<size_t>(c)].h + ARROW;  // the arrow into each box
      w += gutter(n);
    }
    const double head = detail::text_extent(header(n), 12) + 2 * PAD;
    r.w = std::max(w + 2 * PAD, head);
    r.h = HEADER + h + PAD;
  }

  // The picture of node n with its top left corner at (x, y).
  void place(int n, double x, double y, std::string& s) {
    Rect& r = rect_[static_cast<size_t>(n)];
    r = size_[static_cast<size_t>(n)];
    r.x = x;
    r.y = y;
    const ModuleCall& c = call(n);
    s += fmt::format(
        "<g class=\"module\" data-name=\"{}\" data-type=\"{}\" data-params=\"{}\" data-depth=\"{}\" "
        "data-calls=\"{}\">\n",
        xml_escape(c.name), xml_escape(c.type), c.parameters, c.depth, node(n).count);
    s += fmt::format("<title>{}</title>\n",
                     xml_escape(fmt::format("{}{} in {} out {}", c.name.empty() ? "" : c.name + ": ", c.type,
                                            detail::shapes_text(c.inputs), detail::shapes_text(c.outputs))));
    const auto& kids = visible_[static_cast<size_t>(n)];
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
    const double top = r.y + HEADER;
    if (n == 0 && columns_) {
      double cx = r.x + PAD;
      for (int k : kids) {
        const Rect& ks = size_[static_cast<size_t>(k)];
        s += flow(cx + ks.w / 2, top, top + ARROW, -1, k, call(k).inputs);
        place(k, cx, top + ARROW, s);
        cx += ks.w + column_gap();
      }
      return;
    }
    const double inner = r.w - 2 * PAD - gutter(n);
    const double ax = r.x + PAD + inner / 2;  // the column's middle, where the arrows run
    double cy = top;
    int above = -1;
    for (int k : kids) {
      const Rect& ks = size_[static_cast<size_t>(k)];
      s += flow(ax, cy, cy + ARROW, above, k, above < 0 ? call(n).inputs : call(above).outputs);
      place(k, ax - ks.w / 2, cy + ARROW, s);
      cy += ARROW + ks.h;
      above = k;
    }
  }

  // An arrow down from y0 to y1 at x, labelled with the shapes that flowed.
  std::string flow(double x, double y0, double y1, int from, int to, const std::vector<TracedTensor>& shapes) const {
    // The float tensors: token ids and valid lengths label an arrow only
    // where nothing else flows (into an Embedding).
    std::vector<TracedTensor> floats;
    for (const TracedTensor& t : shapes)
      if (!t.integer) floats.push_back(t);
    if (floats.empty() && !shapes.empty()) floats.push_back(shapes[0]);
    const std::string label = detail::shapes_text(floats);
    auto name = [&](int n, const char* none) { return n < 0 ? std::string(none) : xml_escape(call(n).name); };
    std::string s = fmt::format("<g class=\"flow\" data-from=\"{}\" data-to=\"{}\" data-shape=\"{}\">\n",
                                name(from, "input"), name(to, "output"), xml_escape(label));
    s += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\" "
        "marker-end=\"url(#arrow)\"/>\n",
        x, y0, y1 - 1);
    s += detail::svg_text(x + 6, (y0 + y1) / 2 + 4, label, {.anchor = "start", .size = 10.5, .cls = "shape"});
    return s + "</g>\n";
  }

  std::string draw(const Side& side) {
    const Rect& to = rect_[static_cast<size_t>(side.to)];
    const double ty = to.y + to.h / 2;
    std::string path;
    double lx = 0, ly = 0;
    std::string kind;
    if (side.frame >= 0) {  // a skip inside a frame, in its gutter
      const Rect& f = rect_[static_cast<size_t>(side.frame)];
      const double gx = f.right() - PAD - gutter(side.frame) + 8 + LANE * static_cast<double>(used_[side.frame]++) + 4;
      const double inner = f.w - 2 * PAD - gutter(side.frame);
      const double ax = f.x + PAD + inner / 2;
      // It leaves the arrow below its source near that arrow's top, above the arrow's label.
      const double sy = (side.from_input ? f.y + HEADER : rect_[static_cast<size_t>(side.from)].bottom()) + 6;
      path = fmt::format("M {:.1f} {:.1f} H {:.1f} V {:.1f} H {:.1f}", ax, sy, gx, ty, to.right() + 1);
      lx = gx + 4;
      ly = (sy + ty) / 2;
      kind = "skip";
    } else {  // from another branch, through the gap between the columns
      const Rect& from = rect_[static_cast<size_t>(side.from)];
      const double sy = from.bottom() - 12;
      const double gx = from.right() + 20 + LANE * static_cast<double>(cross_used_++);
      path = fmt::format("M {:.1f} {:.1f} H {:.1f} V {:.1f} H {:.1f}", from.right(), sy, gx, ty, to.x - 1);
      // Above its last stretch, into the target: no two of these lines share one.
      lx = (gx + to.x) / 2;
      ly = ty - 4;
      kind = "cross";
    }
    std::string s = fmt::format("<g class=\"{}\" data-from=\"{}\" data-to=\"{}\" data-shape=\"{}\">\n", kind,
                                side.from_input ? "input" : xml_escape(call(side.from).name),
                                xml_escape(call(side.to).name), xml_escape(side.shape));
    s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.3\" marker-end=\"url(#arrow)\"/>\n",
                     path, kind == "skip" ? "#2a7ab0" : "#b05a2a");
    if (kind == "skip")
      s += detail::svg_text(lx, ly, side.shape, {.size = 10, .rotate = 90, .cls = "shape"});
    else
      s += detail::svg_text(lx, ly, side.shape, {.size = 10, .cls = "shape"});
    return s + "</g>\n";
  }

  int last_column() const {
    if (!columns_) return -1;
    return visible_[0].back();
  }

  detail::ModelTree tree_;
  ModelPictureOptions opt_;
  std::vector<std::vector<int>> visible_;  // each node's children that are drawn (all but Dropout)
  std::vector<bool> open_, shown_;
  std::vector<Rect> size_, rect_;
  std::vector<int> lanes_;
  std::map<int, int> used_;
  int cross_lanes_ = 0, cross_used_ = 0;
  bool columns_ = false;
  std::vector<Side> sides_;
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
