// Lesson 03 · parametric attention pooling
//
// Walks through:
//   001 注意力汇聚, 3、带参数注意力汇聚
//     f(x) = Σᵢ softmax(-((x - xᵢ) w)²/2) yᵢ      with w learned
//
// The learner sees lesson 02's kernel with one learnable number w, trained by
// the autograd engine exactly as d2l trains it (SGD, lr 0.5, 5 epochs, the
// squared error summed over the training points, each training point's keys
// and values being the other 49 points); the computation graph of the loss;
// the loss falling epoch by epoch; the learned w; and the attention weights,
// sharper than lesson 02's: measured by the mean entropy of a row of weights
// (lower = sharper), computed here for both lessons' weights.
//
// Run: build/release/lessons/03_parametric_pooling [--seed S] [--epochs E] [--lr LR] [--out DIR]
#include <qkv/qkv.hpp>

#include <cmath>

#include "lesson.hpp"
#include "toy_data.hpp"

using namespace qkv;

// d2l's NWKernelRegression.forward: every query against its own row of keys.
//   queries (n,), keys (n, m), values (n, m), w (1) -> predictions (n,), weights (n, m)
struct Pooled {
  Tensor y_hat, weights;
};
Pooled nw_kernel_regression(const Tensor& queries, const Tensor& keys, const Tensor& values, const Tensor& w) {
  const int64_t n = keys.size(0), m = keys.size(1);
  Tensor q = queries.reshape({n, 1}).expand({n, m});          // (n,) -> (n, m): each query repeated m times
  Tensor d = (q - keys) * w;                                  // (n, m) ⊙ (1) -> (n, m)
  Tensor weights = (-(d * d) / 2).softmax(1);                 // (n, m), rows sum to 1
  Tensor y = weights.unsqueeze(1).bmm(values.unsqueeze(-1));  // (n, 1, m) x (n, m, 1) -> (n, 1, 1)
  return {y.reshape({n}), weights};                           // (n, 1, 1) -> (n,)
}

// The mean over rows of -Σⱼ pⱼ log pⱼ: 0 when each row puts all its weight on
// one key, log(m) when it spreads evenly over m keys.
double mean_row_entropy(const Tensor& weights) {
  Tensor p_log_p = weights * log(weights + 1e-30f);  // a weight of 0 adds 0·log(1e-30) = 0, not 0·(-inf)
  return -static_cast<double>(p_log_p.sum(1).mean().item());
}

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 3);
  int64_t n_train = 50, epochs = 5;
  float lr = 0.5f;
  lesson.option("--n-train", n_train, "number of training points", {.min = 2, .max = 2'000});
  lesson.option("--epochs", epochs, "passes of gradient descent over the training set", {.max = 100'000});
  lesson.option("--lr", lr, "SGD learning rate");
  lesson.start();
  if (epochs < 1) fail("03_parametric_pooling: --epochs must be at least 1, got {}", epochs);

  Generator gen(lesson.seed());
  lesson::ToyData data = lesson::toy_data(n_train, gen);  // the data of lessons 01 and 02
  const int64_t n_test = data.x_test.size(0);

  lesson.section("3、带参数注意力汇聚: the training keys and values");
  lesson.print(
      "Lesson 02's weights softmax(-(x - xᵢ)²/2) have a fixed width. Multiplying the distance by a\n"
      "learnable w lets training choose it: a larger w, a narrower kernel, a sharper attention.\n"
      "To train, each training point is a query whose keys and values are the other n - 1 points\n"
      "(leaving itself out, or the best answer would be to look only at itself).\n");
  const int64_t m = n_train - 1;
  std::vector<float> key_numbers, value_numbers;  // row i: every training point but i
  for (int64_t i = 0; i < n_train; ++i)
    for (int64_t j = 0; j < n_train; ++j)
      if (j != i) {
        key_numbers.push_back(data.x_train.at({j}));
        value_numbers.push_back(data.y_train.at({j}));
      }
  Tensor keys = tensor(key_numbers, {n_train, m});      // (n, n-1)
  Tensor values = tensor(value_numbers, {n_train, m});  // (n, n-1)
  lesson.print("queries x_train {}, keys {}, values {}\n", data.x_train.shape(), keys.shape(), values.shape());

  lesson.section("Training w by gradient descent");
  Tensor w = rand({1}, gen).requires_grad_();  // d2l: torch.rand((1,), requires_grad=True)
  const double w_start = w.item();
  lesson.print("w starts at {:.4f} (drawn from U[0, 1))\n", w_start);
  lesson.print("loss = Σᵢ (ŷᵢ - yᵢ)², the squared error summed over the {} training points (d2l's\n", n_train);
  lesson.print("MSELoss(reduction='none') followed by .sum()); SGD with lr {}, {} epochs.\n", lr, epochs);
  optim::SGD sgd({w}, lr);
  std::vector<double> losses;
  lesson::Progress progress = lesson.progress("epoch", epochs);
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    sgd.zero_grad();
    Pooled fit = nw_kernel_regression(data.x_train, keys, values, w);  // (n,)
    Tensor loss = mse_loss(fit.y_hat, data.y_train, Reduction::Sum);   // (n,) x (n,) -> ()
    lesson::check_finite_loss(loss.item(), "epoch", epoch + 1);        // stops at a NaN or inf
    if (epoch == 0) {  // the graph backward() is about to walk, drawn before it runs
      lesson.graph("loss_graph", loss, "the computation graph of the loss");
    }
    loss.backward();
    sgd.step();
    losses.push_back(loss.item());
    progress.update(epoch + 1, {{"loss", loss.item()}, {"w", w.item()}});
  }
  progress.finish();
  lesson.print("learned w = {:.4f}\n", w.item());
  std::vector<float> epoch_numbers;
  for (int64_t e = 1; e <= epochs; ++e) epoch_numbers.push_back(static_cast<float>(e));
  lesson.line_plot("loss.svg", {{"loss", epoch_numbers, std::vector<float>(losses.begin(), losses.end())}},
                   {.title = "Training loss per epoch", .xlabel = "epoch", .ylabel = "summed squared error"});

  lesson.section("The attention weights: learned w against lesson 02's w = 1");
  // Test time: every query looks at all n training points.
  Tensor test_keys = data.x_train.reshape({1, n_train}).expand({n_test, n_train});    // (50, n)
  Tensor test_values = data.y_train.reshape({1, n_train}).expand({n_test, n_train});  // (50, n)
  Tensor learned_w = w.detach();
  Pooled learned = nw_kernel_regression(data.x_test, test_keys, test_values, learned_w);
  Pooled fixed = nw_kernel_regression(data.x_test, test_keys, test_values, ones({1}));  // lesson 02's kernel
  double entropy_learned = mean_row_entropy(learned.weights), entropy_fixed = mean_row_entropy(fixed.weights);
  lesson.print("weights {} (test queries x training keys)\n", learned.weights.shape());
  lesson.print("mean row entropy (lower = sharper; an even spread over {} keys would be {:.4f}):\n", n_train,
               std::log(static_cast<double>(n_train)));
  lesson.print("  lesson 02, w = 1          {:.4f}\n", entropy_fixed);
  lesson.print("  this lesson, w = {:<8.4f} {:.4f}\n", learned_w.item(), entropy_learned);
  // Both kernels side by side on one colour scale, so that "sharper" can be seen: (1, 2, 50, n)
  Tensor both = stack({fixed.weights, learned.weights}).reshape({1, 2, n_test, n_train});
  const float top = max(both).item();
  lesson.heatmap_grid(
      "attention_weights.svg", both,
      {.title = "Attention weights: lesson 02's kernel and the learned one",
       .col_titles = {"w = 1 (lesson 02)", fmt::format("learned w = {:.2f}", learned_w.item())},
       .cell = {.xlabel = "training inputs x_i (keys)", .ylabel = "test inputs x (queries)", .vmin = 0, .vmax = top}});
  lesson.print(
      "The two panels share one colour scale, 0 to {:.3f}: the learned kernel's band is narrow and bright,\n"
      "each query's weight gathered on a few keys; lesson 02's spreads each query's weight over many keys,\n"
      "so each weight is small and its band, on this scale, faint.\n",
      top);

  lesson.section("The prediction");
  double mse_learned = mse_loss(learned.y_hat, data.y_truth).item();
  double mse_fixed = mse_loss(fixed.y_hat, data.y_truth).item();
  lesson.print("test MSE against the noiseless truth f(x_test): w = 1: {:.4f}, learned w: {:.4f}\n", mse_fixed,
               mse_learned);
  lesson.line_plot("prediction.svg",
                   {{"truth f(x)", data.x_test.to_vector(), data.y_truth.to_vector()},
                    {"w = 1 (lesson 02)", data.x_test.to_vector(), fixed.y_hat.to_vector()},
                    {"learned w", data.x_test.to_vector(), learned.y_hat.to_vector()},
                    {"training points", data.x_train.to_vector(), data.y_train.to_vector(), /*points=*/true}},
                   {.title = "Parametric attention pooling: the prediction", .xlabel = "x", .ylabel = "y"});
  lesson.print(
      "As the notes say, the curve is less smooth where the weights are large: the narrow kernel follows\n"
      "the noise of the nearest training points.\n");

  lesson.result("losses", losses);
  lesson.result("x_train", data.x_train);  // with w_start and w, every number above follows from them
  lesson.result("y_train", data.y_train);
  lesson.result("w_start", w_start);
  lesson.result("w", static_cast<double>(learned_w.item()));
  lesson.result("mean_row_entropy", entropy_learned);
  lesson.result("mean_row_entropy_lesson02", entropy_fixed);
  lesson.result("test_mse", mse_learned);
  lesson.result("test_mse_lesson02", mse_fixed);
  lesson.result("weights", learned.weights);
  lesson.result("prediction", learned.y_hat);

  return lesson.finish(fmt::format(
      "Gradient descent moved w to {:.4f}; the summed squared error fell from {:.4f} to {:.4f} in {} epochs.\n"
      "The attention is sharper than lesson 02's: mean row entropy {:.4f} against {:.4f}.",
      learned_w.item(), losses.front(), losses.back(), epochs, entropy_learned, entropy_fixed));
}
