// viz::model_summary and viz::model_svg: a model drawn from one traced
// forward. The SVG is parsed back as XML (pugixml). What the pictures must
// hold comes from the model itself (its modules by name, each one's
// num_parameters()) and from the layers' definitions (d2l's shapes), not
// from an earlier run of the pictures.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "viz/model_picture_check.hpp"
#include "viz/viz_test_util.hpp"

using namespace qkv;
using qkv::test::check_arrow_shapes;

namespace {

// Every module of `m` by dotted name ("" for m itself), walked through
// named_children: the model's own account, independent of any trace.
void modules_of(const nn::Module& m, const std::string& name, std::map<std::string, const nn::Module*>& out) {
  out[name] = &m;
  for (const auto& [child_name, child] : m.named_children())
    modules_of(*child, name.empty() ? child_name : name + "." + child_name, out);
}

std::string shape_text(const Shape& s) { return fmt::format("{}", s); }

// 25248 -> "25,248", as the pictures print counts.
std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

struct Transformer {
  std::shared_ptr<nn::EncoderDecoder> model;
  viz::ModelTrace trace;
};
// d2l 11.7's Transformer, small: H hidden, h heads, `blocks` blocks per side, B = 2, T = 6 source, S = 5 target steps.
Transformer transformer(int64_t H, int64_t h, int64_t blocks) {
  auto enc = std::make_shared<nn::TransformerEncoder>(20, H, 2 * H, h, blocks, 0.1f);
  auto dec = std::make_shared<nn::TransformerDecoder>(22, H, 2 * H, h, blocks, 0.1f);
  auto model = std::make_shared<nn::EncoderDecoder>(enc, dec);
  IntTensor X = int_tensor(std::vector<int64_t>(12, 3), {2, 6});
  IntTensor Y = int_tensor(std::vector<int64_t>(10, 4), {2, 5});
  IntTensor lens = int_tensor({6, 4});
  model->eval();
  viz::ModelTrace t = nn::trace(*model, [&] { model->forward(X, Y, lens); });
  return {model, t};
}

pugi::xml_document parse(const std::string& svg) {
  pugi::xml_document doc;
  pugi::xml_parse_result ok = doc.load_string(svg.c_str());
  REQUIRE_MESSAGE(ok, ok.description());
  REQUIRE(std::string(doc.document_element().name()) == "svg");
  return doc;
}

std::map<std::string, pugi::xml_node> modules_drawn(const pugi::xml_document& doc) {
  std::map<std::string, pugi::xml_node> out;
  for (pugi::xml_node g : test::with_class(doc, "module")) out[g.attribute("data-name").value()] = g;
  return out;
}

// A line as code points (the tree's box-drawing characters are one column each).
std::vector<std::string> code_points(const std::string& line) {
  std::vector<std::string> out;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80 && !out.empty())
      out.back() += line[i];  // a continuation byte
    else
      out.emplace_back(1, line[i]);
  }
  return out;
}
std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// The rows of a summary between its header rule and its closing rule, cut
// into the columns where the header's titles start.
std::vector<std::vector<std::string>> summary_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  std::vector<size_t> starts;
  int rules = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.find_first_not_of('=') == std::string::npos) {
      ++rules;
      continue;
    }
    if (rules == 1) {  // the header: ASCII, so bytes are columns
      starts = {0};
      for (const char* title : {"Input shape", "Output shape", "Param #", "Calls"}) starts.push_back(line.find(title));
      continue;
    }
    if (rules != 2) continue;  // after the header's two rules, before the closing one
    std::vector<std::string> cps = code_points(line), cells;
    for (size_t k = 0; k < starts.size(); ++k) {
      std::string cell;
      const size_t end = k + 1 < starts.size() ? starts[k + 1] : cps.size();
      for (size_t i = starts[k]; i < std::min(end, cps.size()); ++i) cell += cps[i];
      cells.push_back(trimmed(cell));
    }
    rows.push_back(cells);
  }
  return rows;
}

// The top left corner of the box or frame drawn for module `name`.
struct Corner {
  double x = -1, y = -1, w = 0;
};
Corner corner(const std::map<std::string, pugi::xml_node>& drawn, const std::string& name) {
  auto it = drawn.find(name);
  REQUIRE_MESSAGE(it != drawn.end(), "no module drawn as '" << name << "'");
  pugi::xml_node rect = it->second.child("rect");
  return {rect.attribute("x").as_double(), rect.attribute("y").as_double(), rect.attribute("width").as_double()};
}

// The lines of class `cls` from module `from` to module `to`.
std::vector<pugi::xml_node> lines(const pugi::xml_document& doc, const char* cls, const std::string& from,
                                  const std::string& to) {
  std::vector<pugi::xml_node> out;
  for (pugi::xml_node g : test::with_class(doc, cls))
    if (g.attribute("data-from").value() == from && g.attribute("data-to").value() == to) out.push_back(g);
  return out;
}

}  // namespace

TEST_CASE("model_summary: torchinfo's rows, with the shapes and counts of the layers' definitions") {
  const int64_t H = 4, h = 2, Q = 3, K = 5;
  nn::MultiHeadAttention mha(H, h, 0.0f, /*bias=*/false);
  Tensor queries = randn({1, Q, H}), keys = randn({1, K, H});
  viz::ModelTrace t = nn::trace(mha, [&] { mha(queries, keys, keys); });
  std::vector<std::vector<std::string>> rows = summary_rows(viz::model_summary(t));
  // layer, output shape, parameters: a bias-free Linear(H, H) holds H·H numbers.
  const std::string linear = std::to_string(H * H);
  const std::vector<std::vector<std::string>> expected = {
      {"MultiHeadAttention", "(1, 3, 4)", std::to_string(4 * H * H)},
      {"├─W_q: Linear", "(1, 3, 4)", linear},
      {"├─W_k: Linear", "(1, 5, 4)", linear},
      {"├─W_v: Linear", "(1, 5, 4)", linear},
      {"├─attention: DotProductAttention", "(2, 3, 2)", "0"},  // the heads in the batch: (B·h, Q, H/h)
      {"│  └─dropout: Dropout", "(2, 3, 5)", "0"},             // the weights (B·h, Q, K)
      {"└─W_o: Linear", "(1, 3, 4)", linear},
  };
  REQUIRE(rows.size() == expected.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    REQUIRE(rows[i].size() == 5);
    CHECK(rows[i][0] == expected[i][0]);
    CHECK(rows[i][2] == expected[i][1]);
    CHECK(rows[i][3] == expected[i][2]);
    CHECK(rows[i][4].empty());  // each ran once
  }
  CHECK(rows[0][1] == "(1, 3, 4) (1, 5, 4) (1, 5, 4)");  // queries, keys, values
  // depth 1: the model and the five modules that ran directly inside it.
  CHECK(summary_rows(viz::model_summary(t, 1)).size() == 6);
  const std::string text = viz::model_summary(t);
  CHECK(text.find("Total params: 64\n") != std::string::npos);
}

TEST_CASE("model_summary: a module called at every decoding step is one row marked × S") {
  const int64_t S = 3;
  auto encoder = std::make_shared<nn::Seq2SeqEncoder>(10, 4, 6, 1, 0.0f);
  auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(10, 4, 6, 1, 0.0f);
  nn::EncoderDecoder model(encoder, decoder);
  viz::ModelTrace t = nn::trace(model, [&] {
    model.forward(int_tensor({1, 2, 3, 1, 2, 3}, {2, 3}), int_tensor({1, 2, 3, 4, 5, 6}, {2, S}), int_tensor({3, 2}));
  });
  bool found = false;
  for (const auto& row : summary_rows(viz::model_summary(t)))
    if (row[0] == "├─attention: AdditiveAttention") {
      found = true;
      CHECK(row[4] == "× 3");
    }
  CHECK(found);
}

TEST_CASE("model_svg: every block named, its parameters the module's own count, the traced shapes on the arrows") {
  const int64_t H = 8, h = 2, blocks = 2;
  Transformer tr = transformer(H, h, blocks);
  std::map<std::string, const nn::Module*> modules;
  modules_of(*tr.model, "", modules);
  pugi::xml_document doc = parse(viz::model_svg(tr.trace, {.title = "Transformer", .depth = 10}));
  std::map<std::string, pugi::xml_node> drawn = modules_drawn(doc);

  SUBCASE("every module but Dropout is drawn, block 1 of each side as one box") {
    for (const auto& entry : modules) {
      const std::string& name = entry.first;  // named, not bound: CAPTURE's lambda reads it (clang 14)
      const nn::Module* m = entry.second;
      CAPTURE(name);
      const bool in_later_block = name.find("blks.1.") != std::string::npos;
      if (m->type_name() == "Dropout" || in_later_block) {
        CHECK(drawn.count(name) == 0);
        continue;
      }
      REQUIRE(drawn.count(name) == 1);
      CHECK(std::string(drawn[name].attribute("data-type").value()) == m->type_name());
      CHECK(drawn[name].attribute("data-params").as_llong() == m->num_parameters());
    }
    for (const char* part : {"Embedding", "PositionalEncoding", "MultiHeadAttention", "AddNorm", "PositionWiseFFN",
                             "TransformerEncoderBlock", "TransformerDecoderBlock"}) {
      CAPTURE(part);
      const std::vector<std::string> all = test::texts(doc);
      CHECK(
          std::any_of(all.begin(), all.end(), [&](const std::string& t) { return t.find(part) != std::string::npos; }));
    }
  }
  SUBCASE("the arrows carry the shapes the trace recorded") {
    CHECK(check_arrow_shapes(doc, tr.trace) > 20);
    // And against d2l's shapes: (B, T, H) out of the encoder's embedding, (B·h, T, H/h) out of a head.
    auto shape_from = [&](const std::string& name) {
      for (pugi::xml_node flow : test::with_class(doc, "flow"))
        if (flow.attribute("data-from").value() == name) return std::string(flow.attribute("data-shape").value());
      return std::string("none");
    };
    CHECK(shape_from("encoder.embedding") == "(2, 6, 8)");
    CHECK(shape_from("encoder.blks.0.attention.attention") == "(4, 6, 4)");
    CHECK(shape_from("decoder.blks.0.ffn") == "(2, 5, 8)");
  }
  SUBCASE("residual paths and the encoder's output into the cross-attention") {
    auto side = [&](const char* cls, const std::string& from, const std::string& to) {
      for (pugi::xml_node g : test::with_class(doc, cls))
        if (g.attribute("data-from").value() == from && g.attribute("data-to").value() == to)
          return std::string(g.attribute("data-shape").value());
      return std::string("none");
    };
    CHECK(side("skip", "input", "encoder.blks.0.addnorm1") == "(2, 6, 8)");
    CHECK(side("skip", "encoder.blks.0.addnorm1", "encoder.blks.0.addnorm2") == "(2, 6, 8)");
    CHECK(side("skip", "decoder.blks.0.addnorm2", "decoder.blks.0.addnorm3") == "(2, 5, 8)");
    CHECK(side("cross", "encoder", "decoder.blks.0.attention2") == "(2, 6, 8)");
    CHECK(side("cross", "encoder", "decoder.blks.1") == "(2, 6, 8)");
  }
  SUBCASE("no text overlaps another, every module opened") { test::check_text_layout(doc); }
}

TEST_CASE("model_svg: a flag changes the picture") {
  SUBCASE("blocks: one box per block") {
    for (int64_t blocks : {1, 3}) {
      CAPTURE(blocks);
      pugi::xml_document doc = parse(viz::model_svg(transformer(8, 2, blocks).trace));
      int encoder_blocks = 0;
      for (const auto& [name, g] : modules_drawn(doc))
        encoder_blocks += std::string(g.attribute("data-type").value()) == "TransformerEncoderBlock";
      CHECK(encoder_blocks == blocks);
      CHECK(test::has_text(doc, fmt::format("blks: {} × TransformerEncoderBlock · {} parameters", blocks,
                                            with_commas(transformer(8, 2, blocks).model->encoder->num_parameters() -
                                                        20 * 8))));  // the encoder less its embedding (V·H)
    }
  }
  SUBCASE("heads: the shape of a head's output") {
    for (int64_t h : {1, 4}) {
      CAPTURE(h);
      pugi::xml_document doc = parse(viz::model_svg(transformer(8, h, 1).trace, {.depth = 10}));
      bool found = false;  // the heads as a batch: (B·h, T, H/h) with B = 2, T = 6, H = 8
      for (pugi::xml_node flow : test::with_class(doc, "flow"))
        if (std::string(flow.attribute("data-from").value()) == "encoder.blks.0.attention.attention") {
          found = true;
          CHECK(std::string(flow.attribute("data-shape").value()) == fmt::format("({}, 6, {})", 2 * h, 8 / h));
        }
      CHECK(found);
    }
  }
  SUBCASE("hidden size: the parameter counts") {
    const Transformer small = transformer(8, 2, 1), large = transformer(16, 2, 1);
    CHECK(viz::model_svg(small.trace) != viz::model_svg(large.trace));
    pugi::xml_document doc = parse(viz::model_svg(large.trace));
    CHECK(modules_drawn(doc).at("encoder.embedding").attribute("data-params").as_llong() == 20 * 16);
  }
}

TEST_CASE("model_svg and model_summary: errors") {
  viz::ModelTrace empty;
  CHECK_THROWS_WITH_AS(viz::model_svg(empty), doctest::Contains("model_svg: the trace has no calls"), Error);
  CHECK_THROWS_WITH_AS(viz::model_summary(empty), doctest::Contains("model_summary: the trace has no calls"), Error);
  nn::Linear lin(2, 2);
  viz::ModelTrace t = nn::trace(lin, [&] { lin(randn({1, 2})); });
  CHECK_THROWS_WITH_AS(viz::model_svg(t, {.depth = 0}), doctest::Contains("model_svg: depth 0 must be at least 1"),
                       Error);
  CHECK_THROWS_WITH_AS(viz::model_summary(t, -1), doctest::Contains("model_summary: depth -1"), Error);
  viz::ModelTrace bad = t;
  bad.calls.push_back({"x", "Linear", "", 5, 1, {}, {}, 0, true});
  CHECK_THROWS_WITH_AS(viz::model_summary(bad), doctest::Contains("call 1 (Linear) has parent 5"), Error);
}

TEST_CASE("docs/viz: a model drawn from itself") {
  test::TempDir scratch("model_viz");
  std::filesystem::path dir = scratch.path;
  // --- as in docs/viz.md ---
  nn::TransformerEncoder encoder(/*vocab_size=*/200, /*num_hiddens=*/32, /*ffn_num_hiddens=*/64, /*num_heads=*/4,
                                 /*num_blks=*/2, /*dropout=*/0.1f);
  IntTensor X = int_tensor(std::vector<int64_t>(20, 1), {2, 10});  // (B, T) token ids
  IntTensor valid_lens = int_tensor({10, 6});                      // (B)
  viz::ModelTrace trace = nn::trace(encoder, [&] { encoder(X, valid_lens); });
  fmt::print("{}", viz::model_summary(trace, /*depth=*/3));
  viz::save_model_svg(dir / "encoder.svg", trace, {.title = "TransformerEncoder"});
  // --- end ---
  pugi::xml_document doc = test::load_svg(dir / "encoder.svg");
  CHECK(test::has_text(doc, "TransformerEncoder"));
  // The row docs/viz.md shows for the first block: 4·32² attention weights without bias, FFN 32·64 + 64 + 64·32 + 32,
  // two LayerNorms of 2·32.
  CHECK(trace.calls[0].parameters == 200 * 32 + 2 * (4 * 32 * 32 + (32 * 64 + 64 + 64 * 32 + 32) + 2 * 2 * 32));
}

TEST_CASE("model_svg: data flow, not run order: W_q, W_k and W_v side by side, reading the input in parallel") {
  // d2l 11.5: the three projections read queries, keys and values independently; the heads' attention reads
  // all three; W_o reads the heads put back together. B = 2, Q = 3, K = 5, H = 8, h = 2.
  const int64_t B = 2, Q = 3, K = 5, H = 8, h = 2;
  nn::MultiHeadAttention mha(H, h, 0.0f, /*bias=*/false);
  mha.eval();
  Tensor queries = randn({B, Q, H}), keys = randn({B, K, H});
  auto check_layout = [&](const pugi::xml_document& doc) {
    const std::map<std::string, pugi::xml_node> drawn = modules_drawn(doc);
    const Corner q = corner(drawn, "W_q"), k = corner(drawn, "W_k"), v = corner(drawn, "W_v"),
                 a = corner(drawn, "attention"), o = corner(drawn, "W_o");
    CHECK(q.y == k.y);  // one depth
    CHECK(k.y == v.y);
    CHECK(q.x + q.w < k.x);  // side by side, without overlapping
    CHECK(k.x + k.w < v.x);
    CHECK(a.y > q.y);  // the attention below them, W_o below it
    CHECK(o.y > a.y);
    for (const char* w : {"W_q", "W_k", "W_v"}) {
      CAPTURE(w);
      CHECK(lines(doc, "flow", w, "attention").size() == 1);
      CHECK(lines(doc, "flow", "W_q", w).empty());  // no chain between them
    }
    // The heads as a batch: W_o reads (B, Q, H) that left the attention as (B·h, Q, H/h).
    const std::vector<pugi::xml_node> into_o = lines(doc, "flow", "attention", "W_o");
    REQUIRE(into_o.size() == 1);
    CHECK(std::string(into_o[0].attribute("data-shape").value()) == "(4, 3, 4)");
    CHECK(std::string(into_o[0].attribute("data-read").value()) == "(2, 3, 8)");
  };
  SUBCASE("self-attention: one input, read by all three") {
    Tensor X = randn({B, Q, H});
    viz::ModelTrace t = nn::trace(mha, [&] { mha(X, X, X); });
    pugi::xml_document doc = parse(viz::model_svg(t));
    check_layout(doc);
    for (const char* w : {"W_q", "W_k", "W_v"}) {
      const std::vector<pugi::xml_node> in = lines(doc, "flow", "input", w);
      REQUIRE(in.size() == 1);
      CHECK(in[0].attribute("data-port").as_int() == 0);  // the one tensor, given three times
    }
    CHECK(check_arrow_shapes(doc, t) == 3 + 3 + 1 + 1 + 1);  // in, into the attention, into W_o, out, the model's out
    test::check_text_layout(doc);
  }
  SUBCASE("cross-attention: the queries into W_q, the keys (also the values) into W_k and W_v") {
    viz::ModelTrace t = nn::trace(mha, [&] { mha(queries, keys, keys); });
    pugi::xml_document doc = parse(viz::model_svg(t));
    check_layout(doc);
    auto port_into = [&](const char* w) {
      return lines(doc, "flow", "input", w).at(0).attribute("data-port").as_int();
    };
    CHECK(port_into("W_q") == 0);
    CHECK(port_into("W_k") == 1);
    CHECK(port_into("W_v") == 1);
    CHECK(std::string(lines(doc, "flow", "input", "W_k").at(0).attribute("data-shape").value()) ==
          shape_text(Shape{B, K, H}));
    check_arrow_shapes(doc, t);
    test::check_text_layout(doc);
  }
}

TEST_CASE("model_svg: the Transformer's residual paths and the encoder's output, from the trace alone") {
  Transformer tr = transformer(8, 2, 2);
  pugi::xml_document doc = parse(viz::model_svg(tr.trace));
  const std::map<std::string, pugi::xml_node> drawn = modules_drawn(doc);
  // Encoder and decoder read only the model's inputs: side by side.
  CHECK(corner(drawn, "encoder").y == corner(drawn, "decoder").y);
  CHECK(corner(drawn, "encoder").x + corner(drawn, "encoder").w < corner(drawn, "decoder").x);
  // Inside a block: attention, add & norm, FFN, add & norm one below the other, each add & norm also reading
  // what entered its sublayer, around it.
  const char* chain[] = {"encoder.blks.0.attention", "encoder.blks.0.addnorm1", "encoder.blks.0.ffn",
                         "encoder.blks.0.addnorm2"};
  for (size_t i = 1; i < 4; ++i) {
    CAPTURE(chain[i]);
    CHECK(corner(drawn, chain[i]).y > corner(drawn, chain[i - 1]).y);
    CHECK(lines(doc, "flow", chain[i - 1], chain[i]).size() == 1);
  }
  CHECK(lines(doc, "skip", "input", "encoder.blks.0.addnorm1").size() == 1);
  CHECK(lines(doc, "skip", "encoder.blks.0.addnorm1", "encoder.blks.0.addnorm2").size() == 1);
  // The decoder's causal self-attention reads the block's input; its cross-attention reads the encoder's output.
  CHECK(lines(doc, "flow", "input", "decoder.blks.0.attention1").size() == 1);
  CHECK(lines(doc, "flow", "decoder.blks.0.addnorm1", "decoder.blks.0.attention2").size() == 1);
  CHECK(lines(doc, "cross", "encoder", "decoder.blks.0.attention2").size() == 1);
  CHECK(lines(doc, "cross", "encoder", "decoder.blks.1").size() == 1);
  CHECK(check_arrow_shapes(doc, tr.trace) > 20);
  test::check_text_layout(doc);
}

TEST_CASE("model_svg and model_summary: the decoder's self-attention is marked as causally masked") {
  // TransformerDecoderBlock builds the causal mask for its attention1 (d2l's dec_valid_lens) and notes it
  // on that call (nn::trace_note); the attention that reads the encoder, and the encoder's own, have none.
  Transformer tr = transformer(8, 2, 2);
  pugi::xml_document doc = parse(viz::model_svg(tr.trace));
  const std::map<std::string, pugi::xml_node> drawn = modules_drawn(doc);
  for (const auto& entry : drawn) {  // no structured binding: CAPTURE's lambda cannot capture one in clang 14
    const std::string& name = entry.first;
    const pugi::xml_node g = entry.second;
    CAPTURE(name);
    const bool causal = name.size() > 11 && name.substr(name.size() - 11) == ".attention1";
    CHECK((std::string(g.attribute("data-note").value()) == "causal mask") == causal);
    if (causal) {
      CHECK(name.rfind("decoder.blks.", 0) == 0);
      CHECK(test::has_text(doc, "MultiHeadAttention (causal mask)"));
      CHECK(std::string(g.child_value("title")).find(", causal mask") != std::string::npos);
    }
  }
  CHECK(drawn.count("decoder.blks.0.attention1") == 1);  // the first block drawn open; the second as one box,
  CHECK(std::string(drawn.at("decoder.blks.1").child_value("title")).find("MultiHeadAttention, causal mask") !=
        std::string::npos);  // its parts in its hover text
  // The terminal table says it on the same rows.
  const std::string summary = viz::model_summary(tr.trace);
  size_t rows = 0;
  for (size_t at = summary.find("attention1: MultiHeadAttention (causal mask)"); at != std::string::npos;
       at = summary.find("attention1: MultiHeadAttention (causal mask)", at + 1))
    ++rows;
  CHECK(rows == 2);
  CHECK(summary.find("attention2: MultiHeadAttention (") == std::string::npos);
  test::check_text_layout(doc);
}

TEST_CASE("model_svg: seq2seq with Bahdanau attention: the recurrence and the encoder's state") {
  // d2l 10.7 / 11.4: at each step the decoder's attention reads the previous hidden state (the encoder's
  // final state at the first step) as its query and the encoder's outputs as keys; the GRU reads the context
  // with the step's embedding.
  const int64_t B = 2, T = 4, S = 3, E = 6, H = 8, V = 20;
  auto encoder = std::make_shared<nn::Seq2SeqEncoder>(V, E, H, 1, 0.0f);
  auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(V, E, H, 1, 0.0f);
  nn::EncoderDecoder model(encoder, decoder);
  model.eval();
  viz::ModelTrace t = nn::trace(model, [&] {
    model.forward(int_tensor(std::vector<int64_t>(B * T, 2), {B, T}),
                  int_tensor(std::vector<int64_t>(B * S, 3), {B, S}), int_tensor({4, 2}));
  });
  pugi::xml_document doc = parse(viz::model_svg(t));
  const std::map<std::string, pugi::xml_node> drawn = modules_drawn(doc);
  CHECK(lines(doc, "flow", "encoder.embedding", "encoder.rnn").size() == 1);
  CHECK(lines(doc, "flow", "decoder.embedding", "decoder.rnn").size() == 1);
  CHECK(lines(doc, "flow", "decoder.attention", "decoder.rnn").size() == 1);  // the context
  CHECK(lines(doc, "flow", "decoder.rnn", "decoder.dense").size() == 1);
  CHECK(lines(doc, "loop", "decoder.rnn", "decoder.attention").size() == 1);  // the next step's query
  // From the encoder: its outputs (port 0) as keys and values, its state (port 1) as the first query and h0.
  std::vector<int> ports;
  for (pugi::xml_node g : lines(doc, "cross", "encoder", "decoder.attention"))
    ports.push_back(g.attribute("data-port").as_int());
  std::sort(ports.begin(), ports.end());
  CHECK(ports == std::vector<int>{0, 1});
  const std::vector<pugi::xml_node> h0 = lines(doc, "cross", "encoder", "decoder.rnn");
  REQUIRE(h0.size() == 1);
  CHECK(h0[0].attribute("data-port").as_int() == 1);
  CHECK(std::string(h0[0].attribute("data-shape").value()) == shape_text(Shape{1, B, H}));  // (layers, B, H)
  // The embedding and the attention read nothing of each other: side by side, above the GRU.
  CHECK(corner(drawn, "decoder.embedding").y == corner(drawn, "decoder.attention").y);
  CHECK(corner(drawn, "decoder.rnn").y > corner(drawn, "decoder.attention").y);
  CHECK(check_arrow_shapes(doc, t) > 8);
  test::check_text_layout(doc);
}

TEST_CASE("model_svg: hovering a block shows its shapes (<title>, data-inputs, data-outputs)") {
  Transformer tr = transformer(8, 2, 1);
  pugi::xml_document doc = parse(viz::model_svg(tr.trace, {.depth = 10}));
  std::map<std::string, const viz::ModuleCall*> calls;
  for (const viz::ModuleCall& c : tr.trace.calls) calls.emplace(c.name, &c);
  int checked = 0;
  for (pugi::xml_node g : test::with_class(doc, "module")) {
    const std::string name = g.attribute("data-name").value();
    CAPTURE(name);
    const viz::ModuleCall& c = *calls.at(name);
    auto shapes = [](const std::vector<viz::TracedTensor>& ts) {
      std::string s;
      for (const viz::TracedTensor& x : ts) {
        if (!s.empty()) s += ' ';
        s += shape_text(x.shape);  // appended, not "…" + string&&, whose inlined copy GCC 12 misreads (-Wrestrict)
      }
      return s.empty() ? std::string("--") : s;
    };
    const std::string title = g.child_value("title");
    CHECK(title.find("in: " + shapes(c.inputs)) != std::string::npos);
    CHECK(title.find("out: " + shapes(c.outputs)) != std::string::npos);
    CHECK(title.find(with_commas(c.parameters)) != std::string::npos);
    CHECK(std::string(g.attribute("data-inputs").value()) == shapes(c.inputs));
    CHECK(std::string(g.attribute("data-outputs").value()) == shapes(c.outputs));
    // The title is the group's first child, so that it titles the whole block, box and text.
    CHECK(std::string(g.first_child().name()) == "title");
    ++checked;
  }
  CHECK(checked > 20);
}

namespace {
// Self-attention written by hand around three Linears, in a forward that
// opens a TraceScope: its output is softmax(Q·Kᵀ/√d)·V, an op of all three.
class HandAttention : public nn::Module {
 public:
  explicit HandAttention(int64_t d) {
    q = register_module("q", std::make_shared<nn::Linear>(d, d));
    k = register_module("k", std::make_shared<nn::Linear>(d, d));
    v = register_module("v", std::make_shared<nn::Linear>(d, d));
  }
  Tensor forward(const Tensor& x) const {
    nn::TraceScope trace(*this, {x});
    Tensor scores = bmm((*q)(x), transpose((*k)(x), 1, 2));                                             // (B, T, T)
    return trace.output(bmm(softmax(scores / std::sqrt(static_cast<float>(x.size(2))), -1), (*v)(x)));  // (B, T, d)
  }
  std::string type_name() const override { return "HandAttention"; }
  std::shared_ptr<nn::Linear> q, k, v;
};
}  // namespace

TEST_CASE("model_svg: outputs combined by an op outside any module join below their modules") {
  HandAttention model(4);
  Tensor x = randn({2, 3, 4});
  viz::ModelTrace t = nn::trace(model, [&] { model.forward(x); });
  pugi::xml_document doc = parse(viz::model_svg(t));
  const std::map<std::string, pugi::xml_node> drawn = modules_drawn(doc);
  CHECK(corner(drawn, "q").y == corner(drawn, "k").y);
  CHECK(corner(drawn, "k").y == corner(drawn, "v").y);
  for (const char* name : {"q", "k", "v"}) {
    CAPTURE(name);
    CHECK(lines(doc, "flow", "input", name).size() == 1);
    CHECK(lines(doc, "flow", name, "output").size() == 1);  // all three into the model's output
  }
  // The model's output arrow leaves below the middle of the frame, where the three lines join.
  CHECK(check_arrow_shapes(doc, t) == 3 + 3 + 1);
}

TEST_CASE("model_svg: a block drawn as one box names, on hover, the shapes of the modules inside it") {
  // At the default depth a Transformer's attention is one box; its heads run as a batch of B·h (d2l 11.5),
  // so the heads flag shows in the shapes inside it: (B·h, T, H/h) with B = 2, T = 6, H = 8.
  for (int64_t h : {1, 4}) {
    CAPTURE(h);
    pugi::xml_document doc = parse(viz::model_svg(transformer(8, h, 1).trace));
    const std::string title = modules_drawn(doc).at("encoder.blks.0.attention").child_value("title");
    const std::string head = fmt::format("({}, 6, {})", 2 * h, 8 / h);  // queries, keys, values, and the output
    const size_t at = title.find(fmt::format("attention: DotProductAttention {0} {0} {0}", head));
    REQUIRE(at != std::string::npos);
    CHECK(title.find("-> " + head, at) != std::string::npos);
    CHECK(title.find("W_q: Linear (2, 6, 8) -> (2, 6, 8)") != std::string::npos);
  }
}

TEST_CASE("model_svg: a trace made by hand whose tensors' sources go round in a circle, or name no tensor") {
  // Two Linears of a model, each reading a tensor said to come from the other's input, and one from id 99.
  viz::ModelTrace t;
  t.calls.push_back({"", "Model", "", -1, 0, {{0, Shape{2, 3}, false, {}}}, {{3, Shape{2, 3}, false, {}}}, 18, true});
  t.calls.push_back(
      {"a", "Linear", "", 0, 1, {{1, Shape{2, 3}, false, {2, 99}}}, {{3, Shape{2, 3}, false, {}}}, 9, true});
  t.calls.push_back({"b", "Linear", "", 0, 1, {{2, Shape{2, 3}, false, {1}}}, {{4, Shape{2, 3}, false, {}}}, 9, true});
  pugi::xml_document doc = parse(viz::model_svg(t));
  CHECK(modules_drawn(doc).size() == 3);
}
