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

// Each training point is a query whose keys and values are the other n - 1 points.
struct TrainingSet {
  Tensor keys, values;  // (n, n-1), (n, n-1)
};
TrainingSet leave_one_out(lesson::Lesson& lesson, const lesson::ToyData& data) {
  lesson.section("3、带参数注意力汇聚: the training keys and values");
  lesson.print(
      "Lesson 02's weights softmax(-(x - xᵢ)²/2) have a fixed width. Multiplying the distance by a\n"
      "learnable w lets training choose it: a larger w, a narrower kernel, a sharper attention.\n"
      "To train, each training point is a query whose keys and values are the other n - 1 points\n"
      "(leaving itself out, or the best answer would be to look only at itself).\n");
  const int64_t n = data.x_train.size(0), m = n - 1;
  std::vector<float> key_numbers, value_numbers;  // row i: every training point but i
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (j != i) {
        key_numbers.push_back(data.x_train.at({j}));
        value_numbers.push_back(data.y_train.at({j}));
      }
  TrainingSet set{tensor(key_numbers, {n, m}), tensor(value_numbers, {n, m})};
  lesson.print("queries x_train {}, keys {}, values {}\n", data.x_train.shape(), set.keys.shape(), set.values.shape());
  return set;
}

// The summed squared error Σᵢ (ŷᵢ - yᵢ)² of w on the training set (d2l's MSELoss(reduction='none').sum()).
Tensor training_loss(const lesson::ToyData& data, const TrainingSet& set, const Tensor& w) {
  Pooled fit = nw_kernel_regression(data.x_train, set.keys, set.values, w);  // (n,)
  return mse_loss(fit.y_hat, data.y_train, Reduction::Sum);                  // (n,) x (n,) -> ()
}

// d2l's loop: SGD on w. losses[e] is the loss that epoch e's update starts from.
struct Training {
  Tensor w;
  double w_start, final_loss;
  std::vector<double> losses;
};
Training train(lesson::Lesson& lesson, const lesson::ToyData& data, const TrainingSet& set, Generator& gen,
               int64_t epochs, float lr) {
  lesson.section("Training w by gradient descent");
  Training t{rand({1}, gen).requires_grad_(), 0, 0, {}};  // d2l: torch.rand((1,), requires_grad=True)
  t.w_start = t.w.item();
  const int64_t n = data.x_train.size(0);
  lesson.print("w starts at {:.4f} (drawn from U[0, 1))\n", t.w_start);
  lesson.print("loss = Σᵢ (ŷᵢ - yᵢ)², the squared error summed over the {} training points (d2l's\n", n);
  lesson.print("MSELoss(reduction='none') followed by .sum()); SGD with lr {}, {} epochs.\n", lr, epochs);
  optim::SGD sgd({t.w}, lr);
  lesson::Progress progress = lesson.progress("epoch", epochs);
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    sgd.zero_grad();
    Tensor loss = training_loss(data, set, t.w);
    lesson::check_finite_loss(loss.item(), "epoch", epoch + 1);                             // stops at a NaN or inf
    if (epoch == 0) lesson.graph("loss_graph", loss, "the computation graph of the loss");  // before backward()
    loss.backward();
    sgd.step();
    t.losses.push_back(loss.item());
    progress.update(epoch + 1, {{"loss", loss.item()}, {"w", t.w.item()}});
  }
  progress.finish();
  {
    NoGradGuard no_grad;
    t.final_loss = training_loss(data, set, t.w).item();
  }
  lesson.print("learned w = {:.4f}; the loss of each epoch is the one its update started from, so the last\n",
               t.w.item());
  lesson.print("update's result is measured once more: loss of the learned w = {:.4f}\n", t.final_loss);
  std::vector<float> epoch_numbers, loss_numbers(t.losses.begin(), t.losses.end());
  for (int64_t e = 0; e <= epochs; ++e) epoch_numbers.push_back(static_cast<float>(e));
  loss_numbers.push_back(static_cast<float>(t.final_loss));
  lesson.line_plot("loss.svg", {{"loss", epoch_numbers, loss_numbers}},
                   {.title = "Training loss after each epoch's updates (0: the starting w)",
                    .xlabel = "updates of w",
                    .ylabel = "summed squared error"});
  return t;
}

// Lesson 02's kernel and the learned one, on the same test queries.
struct Comparison {
  Pooled learned, fixed;
  double entropy_learned, entropy_fixed;
};
Comparison compare_weights(lesson::Lesson& lesson, const lesson::ToyData& data, const Tensor& learned_w) {
  lesson.section("The attention weights: learned w against lesson 02's w = 1");
  // Test time: every query looks at all n training points.
  const int64_t n_test = data.x_test.size(0), n_train = data.x_train.size(0);
  Tensor test_keys = data.x_train.reshape({1, n_train}).expand({n_test, n_train});    // (50, n)
  Tensor test_values = data.y_train.reshape({1, n_train}).expand({n_test, n_train});  // (50, n)
  Comparison c{nw_kernel_regression(data.x_test, test_keys, test_values, learned_w),
               nw_kernel_regression(data.x_test, test_keys, test_values, ones({1})), 0, 0};  // lesson 02's kernel
  c.entropy_learned = mean_row_entropy(c.learned.weights);
  c.entropy_fixed = mean_row_entropy(c.fixed.weights);
  lesson.print("weights {} (test queries x training keys)\n", c.learned.weights.shape());
  lesson.print("mean row entropy (lower = sharper; an even spread over {} keys would be {:.4f}):\n", n_train,
               std::log(static_cast<double>(n_train)));
  lesson.print("  lesson 02, w = 1          {:.4f}\n", c.entropy_fixed);
  lesson.print("  this lesson, w = {:<8.4f} {:.4f}\n", learned_w.item(), c.entropy_learned);
  // Each query's weights divided by its largest: the band's width, which is what "sharper" means, on one
  // scale from 0 to 1 where both kernels are visible. (1, 2, 50, n)
  Tensor both =
      stack({c.fixed.weights / max(c.fixed.weights, 1, true), c.learned.weights / max(c.learned.weights, 1, true)})
          .reshape({1, 2, n_test, n_train});
  lesson.heatmap_grid(
      "attention_weights.svg", both,
      {.title = "Attention weights, each query's divided by its largest: lesson 02's kernel and the learned one",
       .col_titles = {"w = 1 (lesson 02)", fmt::format("learned w = {:.2f}", learned_w.item())},
       .cell = {.xlabel = "training inputs x_i (keys)", .ylabel = "test inputs x (queries)", .vmin = 0, .vmax = 1}});
  lesson.print(
      "Each query's weights are drawn divided by its largest weight ({:.3f} at most for w = 1, {:.3f} for the\n"
      "learned w), so both bands show on one scale from 0 to 1 and their widths compare: the learned\n"
      "kernel gathers each query's weight on fewer keys.\n",
      max(c.fixed.weights).item(), max(c.learned.weights).item());
  return c;
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
  lesson.print(
      "This lesson gives lesson 02's kernel one number to learn, the width w, trains it with the autograd\n"
      "engine as d2l does, and shows the loss falling, the learned w and the sharper attention it gives.\n");

  Generator gen(lesson.seed());
  lesson::ToyData data = lesson::toy_data(n_train, gen);  // the data of lessons 01 and 02
  TrainingSet set = leave_one_out(lesson, data);
  Training t = train(lesson, data, set, gen, epochs, lr);
  Tensor learned_w = t.w.detach();
  Comparison c = compare_weights(lesson, data, learned_w);

  lesson.section("The prediction");
  double mse_learned = mse_loss(c.learned.y_hat, data.y_truth).item();
  double mse_fixed = mse_loss(c.fixed.y_hat, data.y_truth).item();
  lesson.print("test MSE against the noiseless truth f(x_test): w = 1: {:.4f}, learned w: {:.4f}\n", mse_fixed,
               mse_learned);
  lesson.line_plot("prediction.svg",
                   {{"truth f(x)", data.x_test.to_vector(), data.y_truth.to_vector()},
                    {"w = 1 (lesson 02)", data.x_test.to_vector(), c.fixed.y_hat.to_vector()},
                    {"learned w", data.x_test.to_vector(), c.learned.y_hat.to_vector()},
                    {"training points", data.x_train.to_vector(), data.y_train.to_vector(), /*points=*/true}},
                   {.title = "Parametric attention pooling: the prediction", .xlabel = "x", .ylabel = "y"});
  lesson.print(
      "As the notes say, the curve is less smooth where the weights are large: the narrow kernel follows\n"
      "the noise of the nearest training points.\n");

  lesson.result("losses", t.losses);
  lesson.result("final_loss", t.final_loss);
  lesson.result("x_train", data.x_train);  // with w_start and w, every number above follows from them
  lesson.result("y_train", data.y_train);
  lesson.result("w_start", t.w_start);
  lesson.result("w", static_cast<double>(learned_w.item()));
  lesson.result("mean_row_entropy", c.entropy_learned);
  lesson.result("mean_row_entropy_lesson02", c.entropy_fixed);
  lesson.result("test_mse", mse_learned);
  lesson.result("test_mse_lesson02", mse_fixed);
  lesson.result("weights", c.learned.weights);
  lesson.result("prediction", c.learned.y_hat);

  lesson.print(
      "\nWhat to remember: a kernel's width can be a parameter, learned by gradient descent like any other.\n");
  return lesson.finish(fmt::format(
      "w moved from {:.4f} to {:.4f}; the summed squared error fell from {:.4f} to {:.4f} in {} epochs.\n"
      "The attention is sharper than lesson 02's: mean row entropy {:.4f} against {:.4f}.",
      t.w_start, learned_w.item(), t.losses.front(), t.final_loss, epochs, c.entropy_learned, c.entropy_fixed));
}
