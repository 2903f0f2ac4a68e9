// The autograd engine: accumulation, shared inputs, zero_grad, NoGradGuard,
// deep graphs, errors; and gradcheck itself.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "reference.hpp"

using namespace qkv;

TEST_CASE("core/autograd: a tensor used twice gets both contributions") {
  // Mathematics: d(x·x)/dx = 2x; d(x·x + x)/dx = 2x + 1.
  Tensor x = tensor({3, -2}).requires_grad_();
  Tensor y = sum(add(mul(x, x), x));
  y.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{7, -3});
}

TEST_CASE("core/autograd: gradients accumulate until zero_grad") {
  Tensor x = tensor({1, 2}).requires_grad_();
  sum(mul(x, 3.0f)).backward();
  sum(mul(x, 3.0f)).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{6, 6});  // 3 + 3
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  sum(mul(x, 3.0f)).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{3, 3});
}

TEST_CASE("core/autograd: backward twice through the same graph adds, not compounds") {
  // Only leaves keep gradients; intermediate ones live for one backward().
  // Mathematics: d(eˣ)/dx = eˣ, twice.
  Tensor x = tensor({2}).requires_grad_();
  Tensor y = mul(exp(x), 1.0f);
  Tensor loss = sum(y);
  loss.backward(Tensor(), /*retain_graph=*/true);
  loss.backward();
  CHECK(x.grad().item() == doctest::Approx(2 * std::exp(2.0)));
}

TEST_CASE("core/autograd: a graph is freed as backward uses it") {
  // As in PyTorch (retain_graph=False by default): once a node has run, the
  // tensors its backward function saved are gone.
  Tensor x = tensor({1, 2}).requires_grad_();
  SUBCASE("a second backward through the same graph is an error") {
    Tensor loss = sum(mul(exp(x), x));
    loss.backward();
    CHECK_THROWS_WITH_AS(loss.backward(),
                         doctest::Contains("backward: trying to backward through the graph a second time (SumBackward "
                                           "has already run"),
                         Error);
  }
  SUBCASE("so is a backward through a part of it that another backward used") {
    Tensor h = exp(x);
    sum(h).backward();
    CHECK_THROWS_WITH_AS(sum(mul(h, 2.0f)).backward(), doctest::Contains("ExpBackward has already run"), Error);
  }
  SUBCASE("the tensors an op saved are freed when its backward has run") {
    Tensor h = exp(x);
    std::weak_ptr<TensorImpl> saved = h.impl();  // MulBackward saves h: mul(h, h) needs its values
    Tensor loss = sum(mul(h, h));
    h = Tensor();
    CHECK_FALSE(saved.expired());
    loss.backward();
    CHECK(saved.expired());
  }
  SUBCASE("retain_graph keeps it, and each backward adds the same gradient") {
    // Mathematics: d(Σ eˣ·x)/dx = eˣ·(x + 1).
    Tensor loss = sum(mul(exp(x), x));
    loss.backward(Tensor(), /*retain_graph=*/true);
    loss.backward(Tensor(), /*retain_graph=*/true);
    loss.backward();
    for (int64_t i = 0; i < 2; ++i) {
      double xi = static_cast<double>(i + 1);
      CHECK(x.grad().at({i}) == doctest::Approx(3 * std::exp(xi) * (xi + 1)));
    }
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("retain_graph=true"), Error);
  }
  SUBCASE("qkv::backward takes it too") {
    Tensor loss = sum(mul(x, x));
    backward(loss, Tensor(), true);
    backward(loss);
    CHECK(x.grad().to_vector() == std::vector<float>{4, 8});  // 2 · 2x (mathematics)
  }
}

TEST_CASE("core/autograd: the graph keeps only the numbers backward functions need") {
  // An edge points at the op that made an input (or at a leaf), not at the
  // input's numbers: an intermediate no backward function reads dies with
  // its last handle, during the forward.
  Tensor x = tensor({1, 2, 3}).requires_grad_();
  Tensor h = mul(x, 2.0f);  // MulBackward by a number keeps only the number
  std::weak_ptr<Storage<float>> h_numbers = h.impl()->storage;
  Tensor loss = sum(add(add(h, h), 1.0f));  // AddBackward keeps only shapes
  h = Tensor();
  CHECK(h_numbers.expired());
  loss.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{4, 4, 4});  // d(2·2x)/dx = 4 (mathematics)
}

TEST_CASE("core/autograd: the backward of a leaf is its seed") {
  Tensor x = tensor({5}).requires_grad_();
  x.backward();
  x.backward(tensor({2}));
  CHECK(x.grad().item() == 3.0f);  // dx/dx = 1, then the given 2 added
}

namespace {
// An op whose backward breaks the contract: `count` gradients of shape `shape`.
Tensor broken_op(const Tensor& x, size_t count, Shape shape) {
  Tensor out = x.detach().clone();
  record(out, "BrokenBackward", {x}, /*saved=*/{},
         [count, shape](const SavedTensors&, const Tensor&) { return std::vector<Tensor>(count, ones(shape)); });
  return out;
}
}  // namespace

TEST_CASE("core/autograd: a backward function that breaks the contract is an error") {
  Tensor x = ones({2, 3}).requires_grad_();
  CHECK_THROWS_WITH_AS(sum(broken_op(x, 2, {2, 3})).backward(),
                       doctest::Contains("backward: BrokenBackward returned 2 gradients for 1 inputs"), Error);
  CHECK_THROWS_WITH_AS(
      sum(broken_op(mul(x, 1.0f), 1, {3, 2})).backward(),
      doctest::Contains("backward: BrokenBackward gave a gradient of shape (3, 2) for input 0 of shape (2, 3)"), Error);
  CHECK_THROWS_WITH_AS(
      sum(broken_op(x, 1, {6})).backward(),
      doctest::Contains("backward: BrokenBackward gave a gradient of shape (6) for input 0 of shape (2, 3)"), Error);
}

TEST_CASE("core/autograd: a given output gradient is used, and not written") {
  Tensor x = tensor({1, 2, 3}).requires_grad_();
  Tensor g = tensor({0.5f, -1, 2});
  mul(x, 2.0f).backward(g);
  CHECK(x.grad().to_vector() == std::vector<float>{1, -2, 4});
  sum(x).backward();
  CHECK(g.to_vector() == std::vector<float>{0.5f, -1, 2});  // the leaf's grad does not alias g
  // Only read, and so not counted as a write: backward functions get dout as a
  // const Tensor, whose data() leaves the version alone (softmax's and
  // dropout's kernels read it so, and add passes it on).
  const uint64_t version = g.impl()->storage->version.get();
  softmax(x, 0).backward(g);
  add(x, x).backward(g);
  CHECK(g.impl()->storage->version.get() == version);
}

TEST_CASE("core/autograd: a backward receives what its op saved") {
  Tensor x = tensor({1, 2}).requires_grad_(), w = tensor({3, 4});
  IntTensor mask = int_tensor({0, 1});
  SUBCASE("in the order listed: Tensors, an IntTensor, an undefined tensor in its place") {
    Tensor out = mul(x.detach(), 2.0f);
    bool ran = false;
    record(out, "Probe", {x}, /*saved=*/{x, mask, Tensor(), w},
           [&ran, x, w](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
             ran = true;
             CHECK(saved.size() == 4);
             CHECK(saved[0].same(x));  // an input is kept as it is (its requires_grad with it)
             CHECK(saved.int_tensor(1).to_vector() == std::vector<int64_t>{0, 1});
             CHECK_FALSE(saved[2].defined());
             CHECK(saved[3].same(w));
             CHECK_THROWS_WITH_AS(saved[1], doctest::Contains("saved[1] is an IntTensor"), Error);
             CHECK_THROWS_WITH_AS(saved.int_tensor(0), doctest::Contains("saved.int_tensor(0): it is a Tensor"), Error);
             CHECK_THROWS_WITH_AS(saved[4], doctest::Contains("saved[4]: out of range"), Error);
             return {mul(dout, 2.0f)};
           });
    sum(out).backward();
    CHECK(ran);
    CHECK(x.grad().to_vector() == std::vector<float>{2, 2});  // d(Σ 2x)/dx = 2 (mathematics)
  }
  SUBCASE("a saved output is kept detached: its numbers, not its graph, so the node does not own itself") {
    Tensor y = exp(x);  // ExpBackward saves its output
    const std::shared_ptr<Node>& node = y.grad_fn();
    REQUIRE(node->saved.size() == 1);
    const Tensor& kept = node->saved[0];
    CHECK(kept.impl()->storage == y.impl()->storage);
    CHECK_FALSE(kept.same(y));
    CHECK(kept.grad_fn() == nullptr);
    std::weak_ptr<Node> graph = y.grad_fn();
    y = Tensor();
    CHECK(graph.expired());  // no cycle: the output's last handle frees its node
  }
}

TEST_CASE("core/autograd: NoGradGuard records nothing") {
  Tensor x = ones({2}).requires_grad_();
  {
    NoGradGuard guard;
    Tensor y = mul(x, 2.0f);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  CHECK(is_grad_enabled());
  Tensor y = mul(x, 2.0f);
  CHECK(y.requires_grad());
  CHECK(y.grad_fn()->name == "MulBackward");
  CHECK_FALSE(mul(ones({2}), 2.0f).requires_grad());  // no input needs grad: no graph
}

TEST_CASE("core/autograd: errors") {
  CHECK_THROWS_WITH_AS(sum(ones({2})).backward(),
                       doctest::Contains("backward: tensor of shape () does not require grad"), Error);
  Tensor x = ones({2, 3}).requires_grad_();
  Tensor y = mul(x, 2.0f);
  CHECK_THROWS_WITH_AS(y.backward(),
                       doctest::Contains("backward: a gradient must be given for a non-scalar output of shape (2, 3)"),
                       Error);
  CHECK_THROWS_WITH_AS(y.backward(ones({3})),
                       doctest::Contains("backward: gradient of shape (3) for an output of shape (2, 3)"), Error);
  CHECK_THROWS_WITH_AS(y.requires_grad_(false), doctest::Contains("requires_grad_: only leaf tensors"), Error);
  CHECK_THROWS_WITH_AS(x.set_grad(ones({3})),
                       doctest::Contains("set_grad: gradient of shape (3) for a tensor of shape (2, 3)"), Error);
}

TEST_CASE("core/autograd: a deep graph needs no deep stack") {
  // 200000 ops in a chain: a recursive topological sort or a recursive
  // destructor would overflow the stack here.
  Tensor x = tensor({1.0f}).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 200000; ++i) y = add(y, 0.0f);
  y.backward();
  CHECK(x.grad().item() == 1.0f);
  y = Tensor();  // frees the chain
  CHECK(x.grad().item() == 1.0f);
}

TEST_CASE("core/autograd: a training loop frees its graphs") {
  // The graph must not own itself: each iteration's graph dies with its loss.
  // The sanitizer build (LeakSanitizer) proves no Node outlives it.
  Generator gen(1);
  Tensor w = randn({4, 4}, gen).requires_grad_();
  std::weak_ptr<Node> first_graph;
  for (int step = 0; step < 50; ++step) {
    Tensor h = tanh(matmul(randn({3, 4}, gen), w));
    Tensor loss = mean(mul(h, h));
    if (step == 0) first_graph = loss.grad_fn();
    loss.backward();
    NoGradGuard no_grad;
    w = sub(w, mul(w.grad(), 0.1f)).detach().requires_grad_();
  }
  CHECK(first_graph.expired());
}

namespace {
// The shape after the "->" of a sum_to case's name: "sum_to/(2,3,4)->(3,1)" gives (3, 1).
Shape target_of(const std::string& name) {
  size_t arrow = name.find("->");
  REQUIRE_MESSAGE(arrow != std::string::npos, name << ": no '->' before the target shape");
  std::string target = name.substr(arrow + 2);
  for (char& ch : target)
    if (ch == '(' || ch == ')' || ch == ',') ch = ' ';
  std::istringstream in(target);
  std::vector<int64_t> dims;
  for (int64_t d = 0; in >> d;) dims.push_back(d);
  return Shape(dims);
}
}  // namespace

TEST_CASE("core/sum_to") {
  Generator gen(2);
  SUBCASE("reduces broadcast dims, and is itself differentiable") {
    auto r = gradcheck([](const std::vector<Tensor>& x) { return sum_to(x[0], {3, 1}); }, {randn({2, 3, 4}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
  // Against torch's sum_to_size, to the target shape each case's name ends with.
  for (const std::string& name : test::reference_cases("core", "sum_to/")) {
    SUBCASE(name.c_str()) {
      test::check_against_torch("core", name, [&](const std::vector<Tensor>& x, const test::RefCase&) {
        return sum_to(x[0], target_of(name));
      });
    }
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(sum_to(ones({2, 3}), {4}), doctest::Contains("sum_to: shapes (2, 3) and (4) do not broadcast"),
                         Error);
    CHECK_THROWS_WITH_AS(broadcast_shapes({2, 3}, {4, 3}, "add"),
                         doctest::Contains("add: shapes (2, 3) and (4, 3) do not broadcast (sizes 2 and 4 at dim 0)"),
                         Error);
  }
}

TEST_CASE("core/clone") {
  Generator gen(3);
  auto r = gradcheck([](const std::vector<Tensor>& x) { return x[0].clone(); }, {randn({2, 3}, gen)});
  CHECK_MESSAGE(r.ok, r.message);
  for (const std::string& name : test::reference_cases("core", "clone/")) {
    CAPTURE(name);
    test::check_against_torch("core", name,
                              [](const std::vector<Tensor>& x, const test::RefCase&) { return x[0].clone(); });
  }
}

// An op whose backward is wrong by 5%: gradcheck must say so.
namespace {
Tensor bad_square(const Tensor& x) {
  Tensor out = mul(x.detach(), x.detach());
  record(out, "BadSquareBackward", {x}, /*saved=*/{x},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           return {mul(mul(dout, saved[0]), 2.0f * 1.05f)};  // true derivative is 2x
         });
  return out;
}
Tensor good_square(const Tensor& x) {
  Tensor out = mul(x.detach(), x.detach());
  record(out, "SquareBackward", {x}, /*saved=*/{x},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           return {mul(mul(dout, saved[0]), 2.0f)};
         });
  return out;
}
}  // namespace

TEST_CASE("core/gradcheck catches a backward that is 5% wrong") {
  Generator gen(4);
  Tensor x = randn({3, 5}, gen);
  auto good = gradcheck([](const std::vector<Tensor>& v) { return good_square(v[0]); }, {x});
  CHECK_MESSAGE(good.ok, good.message);
  auto bad = gradcheck([](const std::vector<Tensor>& v) { return bad_square(v[0]); }, {x});
  CHECK_FALSE(bad.ok);
  CHECK(bad.message.find("gradcheck: input 0 (3, 5) element") != std::string::npos);
  auto none = gradcheck([](const std::vector<Tensor>& v) { return v[0].detach(); }, {x});
  CHECK_FALSE(none.ok);
  CHECK_THROWS_WITH_AS(gradcheck([](const std::vector<Tensor>& v) { return v[0]; }, {Tensor()}),
                       doctest::Contains("gradcheck: input 0 is undefined"), Error);
}
