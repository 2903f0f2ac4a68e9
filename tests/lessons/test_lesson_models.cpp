// The model each lesson draws from itself (Lesson::draw_model: model.svg and
// the summary in the transcript). What the picture must hold comes from the
// lesson's own sizes (its flags, d2l's shapes), not from an earlier run.
#include <doctest/doctest.h>

#include <map>
#include <pugixml.hpp>
#include <string>

#include "run_lesson.hpp"

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
