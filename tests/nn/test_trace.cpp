// nn::trace and TraceScope: which module ran inside which, with its shapes
// and parameter counts. Expected values come from the layers' definitions
// (d2l's shapes: a Linear(in, out) maps (…, in) to (…, out) and holds
// in·out + out numbers; multi-head attention runs its heads as a batch of
// B·h), not from a run of the tracer.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

using namespace qkv;

namespace {

const viz::ModuleCall& find(const viz::ModelTrace& t, const std::string& name) {
  for (const viz::ModuleCall& c : t.calls)
    if (c.name == name) return c;
  FAIL("no call named '" << name << "'");
  throw std::logic_error("unreachable");
}

Shape shape_of(const viz::ModuleCall& c, size_t output) {
  REQUIRE(c.outputs.size() > output);
  return c.outputs[output].shape;
}

// Two Linears under a module whose forward opens no TraceScope, inside one that does.
class Plain : public nn::Module {
 public:
  Plain() {
    a = register_module("a", std::make_shared<nn::Linear>(3, 5));
    b = register_module("b", std::make_shared<nn::Linear>(5, 2));
  }
  Tensor forward(const Tensor& x) const { return (*b)(relu((*a)(x))); }
  std::string type_name() const override { return "Plain"; }
  std::shared_ptr<nn::Linear> a, b;
};
class Outer : public nn::Module {
 public:
  Outer() { inner = register_module("inner", std::make_shared<Plain>()); }
  Tensor forward(const Tensor& x) const {
    nn::TraceScope trace(*this, {x});
    return trace.output(inner->forward(x) * 2.0f);
  }
  std::string type_name() const override { return "Outer"; }
  std::shared_ptr<Plain> inner;
};

}  // namespace

TEST_CASE("trace: off, a layer records nothing and computes the same") {
  nn::Linear lin(3, 4);
  Tensor x = randn({2, 3});
  Tensor y = lin(x);
  viz::ModelTrace t = nn::trace(lin, [&] { CHECK(lin(x).to_vector() == y.to_vector()); });
  REQUIRE(t.calls.size() == 1);  // the model itself, once
  CHECK(t.calls[0].traced);
  CHECK(t.calls[0].name.empty());
  CHECK(t.calls[0].type == "Linear");
  CHECK(t.calls[0].parameters == 3 * 4 + 4);
  CHECK(t.calls[0].inputs.size() == 1);
  CHECK(t.calls[0].inputs[0].shape == Shape{2, 3});
  CHECK(shape_of(t.calls[0], 0) == Shape{2, 4});
  // After the trace, a forward is not recorded anywhere: a second trace sees only its own.
  lin(x);
  CHECK(nn::trace(lin, [] {}).calls.size() == 1);
}

TEST_CASE("trace: a Transformer encoder, nested as it runs, with d2l's shapes") {
  const int64_t B = 2, T = 5, H = 8, h = 2, F = 16, V = 30, blocks = 2;
  nn::TransformerEncoder enc(V, H, F, h, blocks, 0.0f);
  IntTensor X = int_tensor(std::vector<int64_t>(B * T, 1), {B, T});
  IntTensor lens = int_tensor({5, 3});
  viz::ModelTrace t = nn::trace(enc, [&] { enc(X, lens); });

  SUBCASE("each call's parent ran around it, one level up") {
    for (size_t i = 1; i < t.calls.size(); ++i) {
      const viz::ModuleCall& c = t.calls[i];
      REQUIRE(c.parent >= 0);
      REQUIRE(static_cast<size_t>(c.parent) < i);
      const viz::ModuleCall& p = t.calls[static_cast<size_t>(c.parent)];
      CHECK(c.depth == p.depth + 1);
      if (!p.name.empty()) CHECK(c.name.rfind(p.name + ".", 0) == 0);  // dotted below its parent
    }
  }
  SUBCASE("shapes") {
    CHECK(shape_of(find(t, "embedding"), 0) == Shape{B, T, H});
    CHECK(shape_of(find(t, "blks.0.attention.W_q"), 0) == Shape{B, T, H});
    // The heads as a batch: (B·h, T, H/h) in, the same out.
    const viz::ModuleCall& dot = find(t, "blks.1.attention.attention");
    CHECK(dot.inputs[0].shape == Shape{B * h, T, H / h});
    CHECK(dot.inputs[3].shape == Shape{B * h});  // the valid lengths, repeated per head
    CHECK(dot.inputs[3].integer);
    CHECK(shape_of(find(t, "blks.0.ffn.dense1"), 0) == Shape{B, T, F});
    CHECK(shape_of(find(t, "blks.1.addnorm2"), 0) == Shape{B, T, H});
    CHECK(shape_of(t.calls[0], 0) == Shape{B, T, H});
  }
  SUBCASE("parameter counts, from the layers' sizes") {
    CHECK(find(t, "embedding").parameters == V * H);
    CHECK(find(t, "blks.0.attention").parameters == 4 * H * H);  // W_q, W_k, W_v, W_o without bias
    CHECK(find(t, "blks.0.ffn").parameters == (H * F + F) + (F * H + H));
    CHECK(find(t, "blks.0.addnorm1").parameters == 2 * H);
    CHECK(t.calls[0].parameters == enc.num_parameters());
  }
  SUBCASE("the residual: add & norm reads the block's input again") {
    const viz::ModuleCall& block = find(t, "blks.0");
    const viz::ModuleCall& addnorm = find(t, "blks.0.addnorm1");
    const viz::ModuleCall& attention = find(t, "blks.0.attention");
    CHECK(addnorm.inputs[0].id == block.inputs[0].id);       // X
    CHECK(addnorm.inputs[1].id == attention.outputs[0].id);  // the sublayer's output
    CHECK(find(t, "blks.1").inputs[0].id == block.outputs[0].id);
  }
  SUBCASE("the list of blocks has no forward of its own: it stands where it sits") {
    const viz::ModuleCall& list = find(t, "blks");
    CHECK_FALSE(list.traced);
    CHECK(list.inputs[0].id == find(t, "blks.0").inputs[0].id);
    CHECK(list.outputs[0].id == find(t, "blks.1").outputs[0].id);
  }
}

TEST_CASE("trace: a module without TraceScope still appears, between its traced parent and children") {
  Outer model;
  Tensor x = randn({4, 3});
  viz::ModelTrace t = nn::trace(model, [&] { model.forward(x); });
  REQUIRE(t.calls.size() == 4);  // Outer, inner (a stand-in), inner.a, inner.b
  CHECK(t.calls[0].traced);
  const viz::ModuleCall& inner = find(t, "inner");
  CHECK_FALSE(inner.traced);
  CHECK(inner.parent == 0);
  CHECK(find(t, "inner.a").parent == 1);
  CHECK(find(t, "inner.b").parent == 1);
  CHECK(inner.inputs[0].shape == Shape{4, 3});
  CHECK(shape_of(inner, 0) == Shape{4, 2});
  CHECK(inner.parameters == (3 * 5 + 5) + (5 * 2 + 2));
}

TEST_CASE("trace: the model without a scope of its own takes its first and last calls' shapes") {
  Plain model;
  viz::ModelTrace t = nn::trace(model, [&] { model.forward(randn({6, 3})); });
  REQUIRE(t.calls.size() == 3);
  CHECK_FALSE(t.calls[0].traced);
  CHECK(t.calls[0].inputs[0].shape == Shape{6, 3});
  CHECK(shape_of(t.calls[0], 0) == Shape{6, 2});
}

TEST_CASE("trace: a decoder's attention at every step is one module called S times") {
  const int64_t B = 2, T = 4, S = 3, E = 6, H = 8, V = 20;
  auto encoder = std::make_shared<nn::Seq2SeqEncoder>(V, E, H, 1, 0.0f);
  auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(V, E, H, 1, 0.0f);
  nn::EncoderDecoder model(encoder, decoder);
  IntTensor X = int_tensor(std::vector<int64_t>(B * T, 2), {B, T});
  IntTensor Y = int_tensor(std::vector<int64_t>(B * S, 3), {B, S});
  viz::ModelTrace t = nn::trace(model, [&] { model.forward(X, Y, int_tensor({4, 2})); });
  int attention_calls = 0;
  for (const viz::ModuleCall& c : t.calls) attention_calls += c.name == "decoder.attention";
  CHECK(attention_calls == S);
  // The keys are the encoder's outputs, the very tensor it returned.
  const viz::ModuleCall& attention = find(t, "decoder.attention");
  CHECK(attention.inputs[1].id == find(t, "encoder").outputs[0].id);
  CHECK(attention.inputs[1].shape == Shape{B, T, H});
  CHECK(shape_of(t.calls[0], 0) == Shape{B, S, V});
}

TEST_CASE("trace: errors, and the trace ends with its forward") {
  nn::Linear lin(2, 2);
  CHECK_THROWS_WITH_AS(nn::trace(lin, [&] { nn::trace(lin, [] {}); }), doctest::Contains("traces do not nest"), Error);
  CHECK_THROWS_WITH_AS(nn::trace(lin, nullptr), doctest::Contains("nn::trace: no forward to run for Linear"), Error);
  // A forward that throws ends the trace; the next one starts clean.
  CHECK_THROWS_AS(nn::trace(lin, [&] { lin(randn({2, 3})); }), Error);
  viz::ModelTrace t = nn::trace(lin, [&] { lin(randn({1, 2})); });
  CHECK(t.calls.size() == 1);
  CHECK(t.calls[0].traced);
}

TEST_CASE("trace: another thread's forwards are not recorded") {
  nn::Linear lin(2, 3), other(2, 3);
  viz::ModelTrace t = nn::trace(lin, [&] {
    std::thread worker([&] { other(randn({5, 2})); });
    worker.join();
    lin(randn({1, 2}));
  });
  REQUIRE(t.calls.size() == 1);
  CHECK(t.calls[0].inputs[0].shape == Shape{1, 2});
}

TEST_CASE("trace: a tensor computed between modules says which traced tensors it came from") {
  // Multi-head attention splits each projection into heads between W_q and
  // its attention: (B, Q, H) -> (B·h, Q, H/h), a new tensor made by a reshape
  // and a transpose (d2l's transpose_qkv). Its `from` is W_q's output.
  const int64_t B = 2, Q = 3, K = 4, H = 6, h = 2;
  nn::MultiHeadAttention mha(H, h, 0.0f, /*bias=*/false);
  Tensor queries = randn({B, Q, H}), keys = randn({B, K, H});
  SUBCASE("with grad on, and under a NoGradGuard (the trace records the graph it needs, then stops)") {
    for (bool guarded : {false, true}) {
      CAPTURE(guarded);
      std::optional<NoGradGuard> guard;
      if (guarded) guard.emplace();
      viz::ModelTrace t = nn::trace(mha, [&] { mha(queries, keys, keys); });
      CHECK(is_grad_enabled() == !guarded);  // the caller's mode is back
      const viz::ModuleCall& attention = find(t, "attention");
      REQUIRE(attention.inputs.size() >= 3);
      CHECK(attention.inputs[0].shape == Shape{B * h, Q, H / h});
      CHECK(attention.inputs[0].from == std::vector<int>{find(t, "W_q").outputs[0].id});
      CHECK(attention.inputs[1].from == std::vector<int>{find(t, "W_k").outputs[0].id});
      CHECK(attention.inputs[2].from == std::vector<int>{find(t, "W_v").outputs[0].id});
      // W_o reads the heads put back together: from the attention's output.
      CHECK(find(t, "W_o").inputs[0].from == std::vector<int>{attention.outputs[0].id});
      // A tensor that reached a module as it left another needs no `from`: its id is the link.
      CHECK(find(t, "W_q").inputs[0].id == t.calls[0].inputs[0].id);
      CHECK(find(t, "W_q").inputs[0].from.empty());
    }
  }
  SUBCASE("through an op between two modules of a model") {
    Outer model;  // inner.b reads relu(inner.a(x)): from a's output alone
    viz::ModelTrace t = nn::trace(model, [&] { model.forward(randn({6, 3})); });
    CHECK(find(t, "inner.b").inputs[0].from == std::vector<int>{find(t, "inner.a").outputs[0].id});
  }
}

namespace {
// Lesson 06's pattern: the model's inputs reach its first module through ops (a slice, a cat), and one
// input skips that module: out = Linear(cat(x[0], Linear(cat(x[0], y[0])))).
class Joined : public nn::Module {
 public:
  Joined() {
    first = register_module("first", std::make_shared<nn::Linear>(4, 3));
    second = register_module("second", std::make_shared<nn::Linear>(2 + 3, 1));
  }
  Tensor forward(const Tensor& x, const Tensor& y) const {
    nn::TraceScope trace(*this, {x, y});
    Tensor x0 = squeeze(slice(x, 0, 0, 1), 0), y0 = squeeze(slice(y, 0, 0, 1), 0);  // (1, 1, 2) -> (1, 2)
    Tensor h = (*first)(cat({x0, y0}, 1));                                          // (1, 4) -> (1, 3)
    return trace.output((*second)(cat({x0, h}, 1)));                                // (1, 5) -> (1, 1)
  }
  std::string type_name() const override { return "Joined"; }
  std::shared_ptr<nn::Linear> first, second;
};
}  // namespace

TEST_CASE("trace: the model's own inputs are followed through the ops before its modules") {
  // Data tensors (no requires_grad) leave no graph of their own; the trace lends them requires_grad so
  // that `from` names them, and gives it back.
  Joined model;
  Tensor x = randn({1, 1, 2}), y = randn({1, 1, 2});
  Tensor before = model.forward(x, y);
  viz::ModelTrace t = nn::trace(model, [&] { model.forward(x, y); });
  const int x_id = t.calls[0].inputs[0].id, y_id = t.calls[0].inputs[1].id;
  CHECK(find(t, "first").inputs[0].from == std::vector<int>{x_id, y_id});
  CHECK(find(t, "second").inputs[0].from == std::vector<int>{x_id, find(t, "first").outputs[0].id});
  CHECK_FALSE(x.requires_grad());  // given back
  CHECK_FALSE(y.requires_grad());
  CHECK(model.forward(x, y).item() == before.item());
  // An input that already requires grad keeps it.
  Tensor w = randn({1, 1, 2}).requires_grad_();
  nn::trace(model, [&] { model.forward(w, y); });
  CHECK(w.requires_grad());
}

TEST_CASE("trace: trace_note marks the last call of a module; without a trace it does nothing") {
  auto lin = std::make_shared<nn::Linear>(2, 2);
  Tensor x = randn({1, 2});
  nn::trace_note(*lin, "causal mask");  // no trace runs: nothing to mark, no error
  viz::ModelTrace t = nn::trace(*lin, [&] {
    (*lin)(x);
    nn::trace_note(*lin, "first");
    nn::trace_note(*lin, "second");  // the last note holds
  });
  CHECK(t.calls[0].note == "second");
  viz::ModelTrace plain = nn::trace(*lin, [&] { (*lin)(x); });
  CHECK(plain.calls[0].note.empty());
}
