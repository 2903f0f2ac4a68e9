// The checks of exercise 12, softmax as a new op with its hand-written backward.
//   expected:  qkv::softmax(x, -1) and the gradient its backward gives for the same
//              dout; PyTorch's values and gradients; gradcheck against finite differences
//   cases:     a (3, 5) batch, one row, a row of one element, large logits (exp would
//              overflow without the max), 3-D input, PyTorch's cases, gradcheck
#include "12_softmax_op.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

// The gradients a wrong backward gives, from y = softmax(x) and dout.
std::vector<Mistake> backward_mistakes(const Tensor& y, const Tensor& dout) {
  return {{"the Jacobian's diagonal only: the backward's subtraction term missing",
           "dyᵢ/dxⱼ = yᵢ(δᵢⱼ - yⱼ) has off-diagonal terms -yᵢyⱼ: dx = y ⊙ (dout - Σⱼ doutⱼ yⱼ), not y ⊙ dout",
           [=] { return y * dout; }},
          {"the sum in the backward without the y",
           "the correction is Σⱼ doutⱼ yⱼ, weighted by y: (dout * y).sum(-1, true), not dout.sum(-1, true)",
           [=] { return y * (dout - dout.sum(-1, true)); }},
          {"the backward's sum over the whole tensor",
           "each row is its own softmax: sum over the last dim with keepdim, (dout * y).sum(-1, true)",
           [=] { return y * (dout - (dout * y).sum()); }},
          {"the incoming gradient ignored", "dx is dout times the Jacobian: y ⊙ (dout - Σⱼ doutⱼ yⱼ)",
           [=] { return y * (1.0f - y); }}};
}

// The rule of the exercise: the output's backward is the learner's own, one
// node recorded on x (a graph of qkv's ops would have several, and
// softmax's own is forbidden outright).
void own_backward(Grader& g, const Graph& graph) {
  g.require(
      graph.nodes == 1, {"backward", "record(out, \"…\", {x}, /*saved=*/{out}, lambda)"},
      fmt::format("a rule of this exercise is broken: your output's graph has {} ops ({}), so its backward is "
                  "qkv's, not yours. Compute the forward on x.detach() and record one op of your own with record()",
                  graph.nodes, fmt::join(graph.ops, ", ")));
}

void grade_case(Grader& g, const std::string& name, const Tensor& x_in, Generator& gen) {
  g.begin_case(name, fmt::format("x {}", x_in.shape()));
  Tensor dout = randn(x_in.shape(), gen);
  Traced traced = g.trace(
      {x_in}, [](const std::vector<Tensor>& in) { return my_softmax(in[0]); }, dout);
  const Tensor& y = traced.out;
  Tensor want = softmax(x_in, -1);
  auto explain = [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> row(i.begin(), i.end() - 1);
    return fmt::format("the row {}", values(at(x_in, row)));
  };
  g.check({"y", "softmax(x) over the last dim"}, y, want, explain,
          {{"exp without subtracting the max",
            "exp(1000) overflows float to inf, and inf/inf is NaN: subtract each row's max (keepdim) before exp",
            [=] {
              Tensor e = x_in.exp();
              return e / e.sum(-1, true);
            }},
           {"softmax over the wrong dimension", "the op normalises each row: the last dim, -1",
            [=] { return softmax(x_in, 0); }},
           {"the sum over the whole tensor", "divide by each row's own sum: e.sum(-1, true)", [=] {
              Tensor e = (x_in - x_in.max(-1, true)).exp();
              return e / e.sum();
            }}});
  g.require(traced.has_graph, {"backward", "record(out, \"…\", {x}, /*saved=*/{out}, lambda)"},
            "your output has no backward: attach one with record(out, \"MySoftmaxBackward\", {x}, /*saved=*/{out}, "
            "…) (and compute "
            "the forward on x.detach())");
  own_backward(g, traced.graph);
  Tensor x_ref = x_in.detach().clone().requires_grad_();
  softmax(x_ref, -1).backward(dout);
  const Tensor grad = traced.grads.empty() ? zeros(x_in.shape()) : traced.grads[0];
  // A wrong dx: first gradcheck's table (your backward against finite differences), then the comparison.
  if ((grad - x_ref.grad()).abs().max().item() > 1e-4f) {
    g.print("  your backward against finite differences (gradcheck's table):\n");
    g.gradient_table([](const std::vector<Tensor>& in) { return my_softmax(in[0]); }, {x_in});
  }
  auto explain_dx = [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> row(i.begin(), i.end() - 1);
    return fmt::format("the row's y {}, its dout {}", values(at(want, row)), values(at(dout, row)));
  };
  g.check({"dx", "y ⊙ (dout - Σⱼ doutⱼ yⱼ), against qkv's softmax backward"}, grad, x_ref.grad(), explain_dx,
          backward_mistakes(want, dout));
}

}  // namespace

int main(int argc, char** argv) {
  return grade(12, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::softmax(", "SoftmaxBackward", "exercise 12 is softmax itself: write its forward and backward"},
              {"qkv::Tensor::softmax(", "", "exercise 12 is softmax itself: write its forward and backward"},
              {"qkv::log_softmax(", "LogSoftmaxBackward", "exercise 12 is softmax itself: not through log_softmax"},
              {"qkv::Tensor::log_softmax(", "", "exercise 12 is softmax itself: not through log_softmax"},
              {"qkv::masked_softmax(", "MaskedSoftmaxBackward",
               "exercise 12 is softmax itself: not through masked_softmax"}});
    Generator gen(g.seed());
    grade_case(g, "a batch of rows", randn({3, 5}, gen), gen);
    grade_case(g, "one row", randn({1, 4}, gen), gen);
    grade_case(g, "large logits", tensor({1000.0f, 1001.0f, 999.0f, -1000.0f, 0.0f, 1000.0f}, {2, 3}), gen);
    grade_case(g, "3-D input", randn({2, 3, 4}, gen), gen);
    grade_case(g, "rows of one element", randn({4, 1}, gen), gen);

    for (const TorchCase& c : g.torch_cases("12/")) {
      g.begin_case("PyTorch: " + c.name, fmt::format("x {}", c.f("x0").shape()));
      g.check_torch(
          {"y", "against torch.softmax(x, -1), float64"}, [](const std::vector<Tensor>& x) { return my_softmax(x[0]); },
          c);
    }

    g.begin_case("gradcheck", "x (3, 4)");
    g.check_gradients("of your backward against finite differences",
                      [](const std::vector<Tensor>& x) { return my_softmax(x[0]); }, {randn({3, 4}, gen)});
  });
}
