// The model each lesson draws from itself (Lesson::draw_model: model.svg and
// the summary in the transcript). What the picture must hold comes from the
// lesson's own sizes (its flags, d2l's shapes), not from an earlier run; the
// shape on every line is held against the shapes its producer's box records
// (tests/viz/model_picture_check.hpp).
#include <doctest/doctest.h>

#include <map>
#include <pugixml.hpp>
#include <string>

#include "run_lesson.hpp"
#include "viz/model_picture_check.hpp"

using qkv::lesson_test::LessonRun;

namespace {

struct Picture {
  pugi::xml_document doc;
  std::map<std::string, pugi::xml_node> modules;  // by data-name
};

void load(const LessonRun& r, Picture& p) {
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  bool listed = false;
  for (const auto& pic : r.json.at("pictures")) listed = listed || pic.at("file") == "model.svg";
  CHECK(listed);
  REQUIRE(p.doc.load_file((r.out / "model.svg").c_str()));
  for (const pugi::xpath_node& n : p.doc.select_nodes("//*[@class='module']"))
    p.modules[n.node().attribute("data-name").value()] = n.node();
}

// The module `name` was drawn, with these input and output shapes ("(1, 1, 32) (1, 32, 64)").
void check_module(const Picture& p, const std::string& name, const std::string& type, const std::string& inputs,
                  const std::string& outputs) {
  CAPTURE(name);
  REQUIRE(p.modules.count(name) == 1);
  const pugi::xml_node g = p.modules.at(name);
  CHECK(std::string(g.attribute("data-type").value()) == type);
  CHECK(std::string(g.attribute("data-inputs").value()) == inputs);
  CHECK(std::string(g.attribute("data-outputs").value()) == outputs);
}

// The number of lines of class `cls` from `from` (at output `port`) to `to`.
int lines(const Picture& p, const std::string& cls, const std::string& from, int port, const std::string& to) {
  int n = 0;
  for (const pugi::xpath_node& x : p.doc.select_nodes(fmt::format("//*[@class='{}']", cls).c_str()))
    n += x.node().attribute("data-from").value() == from && x.node().attribute("data-port").as_int() == port &&
         x.node().attribute("data-to").value() == to;
  return n;
}

int count_type(const Picture& p, const std::string& type) {
  int n = 0;
  for (const auto& [name, g] : p.modules) n += g.attribute("data-type").value() == type;
  return n;
}

}  // namespace

TEST_CASE("lesson models: 13 draws the learner's own layer with its own shapes") {
  LessonRun r("13_your_own_layer", "--hidden 8 --steps 5");
  Picture p;
  load(r, p);
  REQUIRE(p.modules.count(""));
  CHECK(std::string(p.modules[""].attribute("data-type").value()) == "SwishMLP");
  // Linear(2, 8), Linear(8, 8), Linear(8, 2): in·out + out numbers each.
  CHECK(p.modules["fc1"].attribute("data-params").as_llong() == 2 * 8 + 8);
  CHECK(p.modules["fc2"].attribute("data-params").as_llong() == 8 * 8 + 8);
  CHECK(p.modules["out"].attribute("data-params").as_llong() == 8 * 2 + 2);
  CHECK(p.modules[""].attribute("data-params").as_llong() == (2 * 8 + 8) + (8 * 8 + 8) + (8 * 2 + 2));
  CHECK(r.results().at("model_parameters").get<int64_t>() == (2 * 8 + 8) + (8 * 8 + 8) + (8 * 2 + 2));
  // Its forward opens a TraceScope: a solid frame, its own input (N, 2).
  CHECK(p.doc.select_node("//*[@class='frame' and @stroke-dasharray='none']"));
  // Its data flow, through the Swish between its layers: fc1 -> fc2 -> out, each arrow (N, hidden).
  for (const auto& edge : {std::pair{"fc1", "fc2"}, std::pair{"fc2", "out"}}) {
    const char* from = edge.first;  // a plain variable: clang 14 cannot capture a structured binding in CAPTURE
    CAPTURE(from);
    const pugi::xpath_node arrow = p.doc.select_node(
        fmt::format("//*[@class='flow' and @data-from='{}' and @data-to='{}']", from, edge.second).c_str());
    REQUIRE(arrow);
    const std::string shape = arrow.node().attribute("data-shape").value();
    CHECK(shape.size() > 4);
    CHECK(shape.substr(shape.size() - 4) == ", 8)");
  }
  const std::string transcript = qkv::lesson_test::read_text(r.out / "transcript.txt");
  CHECK(transcript.find("SwishMLP drawn from one forward of it (model.svg)") != std::string::npos);
  CHECK(transcript.find("├─fc1: Linear") != std::string::npos);
}

TEST_CASE("lesson models: 06 draws the notes' Attn with its own three inputs and two outputs") {
  LessonRun r("06_attn_module");
  Picture p;
  load(r, p);
  // 000 §4's call: Q (1,1,32), K (1,1,32), V (1,32,64) -> output (1,1,64), weights (1,32). attn is
  // Linear(32 + 32, 32) on cat(Q[0], K[0]); attn_combine Linear(32 + 64, 64) on cat(Q[0], the bmm with V).
  check_module(p, "", "Attn", "(1, 1, 32) (1, 1, 32) (1, 32, 64)", "(1, 1, 64) (1, 32)");
  check_module(p, "attn", "Linear", "(1, 64)", "(1, 32)");
  check_module(p, "attn_combine", "Linear", "(1, 96)", "(1, 64)");
  CHECK(p.modules["attn"].attribute("data-params").as_llong() == 64 * 32 + 32);
  CHECK(p.modules["attn_combine"].attribute("data-params").as_llong() == 96 * 64 + 64);
  CHECK(p.doc.select_node("//*[@class='frame' and @stroke-dasharray='none']"));  // traced: a solid frame
  // Q and K into attn; V (input 2) and Q (input 0) into attn_combine, beside attn's weights.
  CHECK(lines(p, "flow", "input", 0, "attn") == 1);
  CHECK(lines(p, "flow", "input", 1, "attn") == 1);
  CHECK(lines(p, "flow", "input", 0, "attn_combine") + lines(p, "skip", "input", 0, "attn_combine") == 1);
  CHECK(lines(p, "flow", "input", 2, "attn_combine") + lines(p, "skip", "input", 2, "attn_combine") == 1);
  CHECK(lines(p, "flow", "attn", 0, "attn_combine") == 1);
  CHECK(qkv::test::check_arrow_shapes(p.doc, qkv::test::traced_shapes(p.doc)) >= 6);
}

TEST_CASE("lesson models: 07 draws SelfAttention, its three projections side by side") {
  LessonRun r("07_self_attention");
  Picture p;
  load(r, p);
  // 002's SelfAttention(vec_size = 10) on sents (2, 4, 10): QueryW, KeyW, ValueW are Linear(10, 10).
  check_module(p, "", "SelfAttention", "(2, 4, 10)", "(2, 4, 10)");
  for (const char* w : {"QueryW", "KeyW", "ValueW"}) {
    check_module(p, w, "Linear", "(2, 4, 10)", "(2, 4, 10)");
    CHECK(p.modules[w].attribute("data-params").as_llong() == 10 * 10 + 10);
    CHECK(lines(p, "flow", "input", 0, w) == 1);
  }
  auto y_of = [&](const char* name) { return p.modules.at(name).child("rect").attribute("y").as_double(); };
  CHECK(y_of("QueryW") == y_of("KeyW"));
  CHECK(y_of("KeyW") == y_of("ValueW"));
  CHECK(qkv::test::check_arrow_shapes(p.doc, qkv::test::traced_shapes(p.doc)) >= 4);
}

TEST_CASE("lesson models: 08 draws the GRU encoder, the attention decoder and the encoder's state into it") {
  LessonRun r("08_seq2seq_attention", "--epochs 1 --embed 8 --hidden 12");
  Picture p;
  load(r, p);
  // Drawn on 4 training pairs of T = 10 tokens: E = 8, H = 12, one GRU layer.
  const std::string ids = "(4, 10)";
  check_module(p, "encoder", "Seq2SeqEncoder", ids, "(4, 10, 12) (1, 4, 12)");
  check_module(p, "encoder.rnn", "GRU", "(10, 4, 8)", "(10, 4, 12) (1, 4, 12)");
  // One decoder step: the query (B, 1, H) over the encoder's outputs (B, T, H), masked by their lengths (B).
  check_module(p, "decoder.attention", "AdditiveAttention", "(4, 1, 12) (4, 10, 12) (4, 10, 12) (4)", "(4, 1, 12)");
  check_module(p, "decoder.rnn", "GRU", "(1, 4, 20) (1, 4, 12)", "(1, 4, 12) (1, 4, 12)");  // E + H in
  for (const char* part : {"encoder.embedding", "decoder.embedding", "decoder.dense"})
    CHECK(p.modules.count(part) == 1);
  CHECK(p.modules[""].attribute("data-params").as_llong() == r.results().at("model_parameters").get<int64_t>());
  // The encoder's outputs into the attention, its state into the GRU; the GRU's state back into the attention.
  CHECK(lines(p, "cross", "encoder", 0, "decoder.attention") == 1);
  CHECK(lines(p, "cross", "encoder", 1, "decoder.rnn") == 1);
  CHECK(lines(p, "loop", "decoder.rnn", 1, "decoder.attention") == 1);
  CHECK(qkv::test::check_arrow_shapes(p.doc, qkv::test::traced_shapes(p.doc)) >= 10);
}

TEST_CASE("lesson models: 09 draws multi-head attention, its heads as a batch") {
  LessonRun r("09_multi_head_attention");
  Picture p;
  load(r, p);
  // d2l 11.5: H = 100, h = 5, no bias: W_q, W_k, W_v, W_o hold 100·100 numbers each.
  CHECK(p.modules[""].attribute("data-params").as_llong() == 4 * 100 * 100);
  // The heads' attention reads (B·h, Q, H/h) = (10, 4, 20) and returns the same.
  bool found = false;
  for (const pugi::xpath_node& n : p.doc.select_nodes("//*[@class='flow']"))
    if (std::string(n.node().attribute("data-from").value()) == "attention") {
      found = true;
      CHECK(std::string(n.node().attribute("data-shape").value()) == "(10, 4, 20)");
    }
  CHECK(found);
  // Drawn as data flows: the three projections read the queries and keys side by side, at one depth.
  auto y_of = [&](const char* name) { return p.modules.at(name).child("rect").attribute("y").as_double(); };
  CHECK(y_of("W_q") == y_of("W_k"));
  CHECK(y_of("W_k") == y_of("W_v"));
  CHECK(y_of("attention") > y_of("W_q"));
}

TEST_CASE("lesson models: 12 draws the classifier's attention pooling") {
  LessonRun r("12_attention_classifier");
  Picture p;
  load(r, p);
  auto flows = [&](const char* cls, const std::string& from, const std::string& to) {
    int n = 0;
    for (const pugi::xpath_node& x : p.doc.select_nodes(fmt::format("//*[@class='{}']", cls).c_str()))
      n += x.node().attribute("data-from").value() == from && x.node().attribute("data-to").value() == to;
    return n;
  };
  // The pooling attention's keys are the features of the placed words; its values the embedded words, which
  // skip the positions and the features (a line around the side); its pooled (B, 1, D) feeds the head.
  CHECK(flows("flow", "features", "attention") == 1);
  CHECK(flows("skip", "embedding", "attention") == 1);
  CHECK(flows("flow", "attention", "head") == 1);
  // Traced: both inputs, the ids (B, T) and their lengths (B), and the logits (B, 2).
  const std::vector<std::string> in = qkv::test::split_shapes(p.modules[""].attribute("data-inputs").value());
  REQUIRE(in.size() == 2);
  const std::string B = in[0].substr(1, in[0].find(',') - 1);  // X (B, T)
  CHECK(in[1] == "(" + B + ")");                               // valid_len (B)
  CHECK(std::string(p.modules[""].attribute("data-outputs").value()) == "(" + B + ", 2)");
  CHECK(std::string(p.modules["head"].attribute("data-type").value()) == "ClassifierHead");
  CHECK(qkv::test::check_arrow_shapes(p.doc, qkv::test::traced_shapes(p.doc)) >= 5);
}

TEST_CASE("lesson models: 11's picture follows --blocks and --heads") {
  for (int blocks : {1, 3}) {
    CAPTURE(blocks);
    LessonRun r("11_transformer", fmt::format("--epochs 1 --blocks {} --heads 2", blocks));
    Picture p;
    load(r, p);
    CHECK(count_type(p, "TransformerEncoderBlock") == blocks);
    CHECK(count_type(p, "TransformerDecoderBlock") == blocks);
    for (const char* part :
         {"encoder.embedding", "encoder.pos_encoding", "encoder.blks.0.attention", "encoder.blks.0.addnorm1",
          "encoder.blks.0.ffn", "encoder.blks.0.addnorm2", "decoder.blks.0.attention1", "decoder.blks.0.attention2",
          "decoder.blks.0.addnorm3", "decoder.dense"})
      CHECK(p.modules.count(part) == 1);
    CHECK(p.modules[""].attribute("data-params").as_llong() == r.results().at("model_parameters").get<int64_t>());
    CHECK(p.doc.select_nodes("//*[@class='cross']").size() == static_cast<size_t>(blocks));
    // The decoder block's self-attention is drawn as causally masked; its attention on the encoder is not.
    CHECK(std::string(p.modules["decoder.blks.0.attention1"].attribute("data-note").value()) == "causal mask");
    CHECK(std::string(p.modules["decoder.blks.0.attention2"].attribute("data-note").value()).empty());

    // The trained decoder's masked self-attention, every block and head (blocks, 2, S, S): causal, so
    // step s gives no weight to a later step, and each row is a softmax (sums to 1).
    const std::vector<int64_t> shape = r.shape("decoder_self_attention");
    REQUIRE(shape.size() == 4);
    CHECK(shape[0] == blocks);
    CHECK(shape[1] == 2);
    CHECK(shape[2] == shape[3]);
    const std::vector<float> w = r.values("decoder_self_attention");
    const int64_t S = shape[2];
    for (int64_t m = 0; m < shape[0] * shape[1]; ++m)
      for (int64_t q = 0; q < S; ++q) {
        double row = 0;
        for (int64_t k = 0; k < S; ++k) {
          const float v = w[static_cast<size_t>((m * S + q) * S + k)];
          if (k > q) CHECK(v == 0.0f);
          row += v;
        }
        CHECK(row == doctest::Approx(1.0).epsilon(1e-5));
      }
  }
}
