// A program of your own on top of qkv: an op of its own (tanh, with its
// backward written out) and a custom layer (an nn::Module with its own
// parameter and two submodules) that uses it, trained with Adam to fit a
// noisy sine.
// It is built against the installed package (find_package(qkv)) and through
// add_subdirectory by ctest (the `install.*` tests), and checks itself: the
// exit status is non-zero if it did not learn.
//
// The toy problem: x ~ U[-π, π], y = sin(x) + ε with ε ~ N(0, σ²), σ = 0.1.
// Predicting the mean of y leaves a mean squared error of Var(sin x) = 1/2;
// the best any model can do is the noise, E[ε²] = σ² = 0.01. The program
// passes when gradcheck passes the op's backward and the training loss is
// below 2σ² = 0.02: within a factor of two of the noise floor, which it
// cannot reach without having learned the sine.
#include <qkv/qkv.hpp>

#include <cmath>
#include <memory>
#include <numbers>
#include <vector>

using namespace qkv;

// y = tanh x      dy/dx = 1 − y²
// An op (README, "Adding an op"): the forward computed without recording,
// the backward attached beneath it. The backward reads the output y, so the
// op saves `out`: record() keeps it (detached, so that the node does not own
// itself), checks that nothing wrote into it before the backward runs, and
// hands it back as saved[0].
Tensor my_tanh(const Tensor& x) {
  Tensor out = tanh(x.detach());  // forward, without recording
  record(out, "MyTanhBackward", /*inputs=*/{x}, /*saved=*/{out},
         [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
           const Tensor& y = saved[0];
           return {dout * (1.0f - y * y)};  // dx = dout · (1 − y²)
         });
  return out;
}

// y = out(my_tanh(hidden(x))) + skip·x: one hidden layer of tanh units beside a
// learned linear term. x: (N, 1) -> y: (N, 1).
struct SkipMLP : nn::Module {
  std::shared_ptr<nn::Linear> hidden, out;
  Tensor skip;  // (1)

  SkipMLP(int64_t width, Generator& gen) {
    hidden = register_module("hidden", std::make_shared<nn::Linear>(1, width, true, gen));
    out = register_module("out", std::make_shared<nn::Linear>(width, 1, true, gen));
    register_parameter("skip", skip, zeros({1}));
  }
  Tensor operator()(const Tensor& x) const { return (*out)(my_tanh((*hidden)(x))) + x * skip; }
  std::string type_name() const override { return "SkipMLP"; }
};

int main() {
  constexpr int64_t n = 256;
  constexpr float sigma = 0.1f;
  Generator gen(0);

  // The op's backward against finite differences, before it is used (on
  // numbers of its own, so that the data below are drawn as without it).
  Generator check_gen(1);
  GradcheckResult check =
      gradcheck([](const std::vector<Tensor>& in) { return my_tanh(in[0]); }, {randn({3, 4}, check_gen)});
  if (!check.ok) {
    fmt::print(stderr, "custom_layer: my_tanh's backward is wrong: {}\n", check.message);
    return 1;
  }
  fmt::print("gradcheck(my_tanh): passed\n");

  // The data: x uniform in [-π, π), y = sin(x) + σ·ε, both (N, 1).
  const auto pi = std::numbers::pi_v<float>;
  Tensor x = rand({n, 1}, gen) * (2 * pi) - pi;
  Tensor noise = randn({n, 1}, gen) * sigma;
  std::vector<float> y_values(n);
  for (int64_t i = 0; i < n; ++i) y_values[static_cast<size_t>(i)] = std::sin(x.data()[i]) + noise.data()[i];
  Tensor y = tensor(y_values, {n, 1});

  SkipMLP model(16, gen);
  fmt::print("{}\n", model.repr());
  optim::Adam optimizer(model.parameters(), /*lr=*/0.02f);

  float first = 0, last = 0;
  for (int step = 0; step <= 500; ++step) {
    optimizer.zero_grad();
    Tensor loss = mse_loss(model(x), y);
    loss.backward();
    optimizer.step();
    last = loss.item();
    if (step == 0) first = last;
    if (step % 100 == 0) fmt::print("step {:4}  loss {:.4f}\n", step, last);
  }

  const float threshold = 2 * sigma * sigma;
  if (!(last < threshold)) {  // also fails on NaN
    fmt::print(stderr, "custom_layer: loss {:.4f} (from {:.4f}) did not fall below 2σ² = {:.4f}\n", last, first,
               threshold);
    return 1;
  }
  fmt::print("loss {:.4f} -> {:.4f}, below 2σ² = {:.4f} (the noise alone gives σ² = {:.4f})\n", first, last, threshold,
             sigma * sigma);
  return 0;
}
