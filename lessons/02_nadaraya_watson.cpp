// Lesson 02 · Nadaraya–Watson kernel regression
//
// Walks through:
//   001 注意力汇聚, 2、非参数注意力汇聚
//     f(x) = Σᵢ softmax(-(x - xᵢ)²/2) yᵢ     (the Gaussian kernel K(u) = exp(-u²/2)/√(2π))
//
// The learner sees the same data as lesson 01, the attention weights of every
// test query over every training key (a 50 × 50 heatmap: a bright band along
// the diagonal, since a query looks at the keys near it), the prediction curve
// that now follows f(x), and its test MSE printed beside lesson 01's. Then
// d2l's two comparisons: four kernels (Gaussian, boxcar, constant,
// Epanechnikov) and four widths of the Gaussian, each with its test MSE, the
// weights of one query and the prediction drawn.
//
// Run: build/release/lessons/02_nadaraya_watson [--seed S] [--n-train N] [--out DIR]
#include <qkv/qkv.hpp>

#include <algorithm>
#include <functional>

#include "lesson.hpp"
#include "toy_data.hpp"

using namespace qkv;

namespace {

// A similarity kernel K(d) of the distance d = x - xᵢ between a query and a key.
struct Kernel {
  std::string name, formula;
  std::function<Tensor(const Tensor&)> K;  // elementwise: d (50, n) -> K(d) (50, n)
};

// Nadaraya–Watson with any kernel: α(x, xᵢ) = K(x - xᵢ) / Σⱼ K(x - xⱼ), f(x) = Σᵢ α(x, xᵢ) yᵢ.
struct Pooled {
  Tensor weights, y_hat;  // (50, n), (50,)
};
Pooled nadaraya_watson(const lesson::ToyData& data, const Kernel& kernel) {
  const int64_t n_test = data.x_test.size(0), n_train = data.x_train.size(0);
  Tensor d = data.x_test.reshape({n_test, 1}) - data.x_train.reshape({1, n_train});  // (50, 1) - (1, n) -> (50, n)
  Tensor k = kernel.K(d);                                                            // (50, n)
  Tensor weights = k / k.sum(-1, true);                                              // (50, n) / (50, 1)
  return {weights, weights.matmul(data.y_train)};                                    // (50, n) x (n,) -> (50,)
}

// d2l's kernels (its "Epanechikov" is max(0, 1 - |d|), the triangular kernel;
// Epanechnikov's own ¾(1 - d²) on |d| < 1 has the same support and a rounder top).
std::vector<Kernel> d2l_kernels() {
  return {{"Gaussian", "exp(-d²/2)", [](const Tensor& d) { return exp(-(d * d) / 2); }},
          {"boxcar", "1 if |d| < 1, else 0",
           [](const Tensor& d) { return masked_fill(ones_like(d), ge(abs(d), 1.0f), 0); }},
          {"constant", "1", [](const Tensor& d) { return ones_like(d); }},
          {"Epanechnikov", "max(0, 1 - |d|)", [](const Tensor& d) { return relu(1.0f - abs(d)); }}};
}

// The Gaussian of width σ: exp(-d²/(2σ²)); lesson 02's kernel is σ = 1.
Kernel gaussian_with_width(float sigma) {
  return {fmt::format("σ = {}", sigma), fmt::format("exp(-d²/(2·{}²))", sigma),
          [sigma](const Tensor& d) { return exp(-(d * d) / (2 * sigma * sigma)); }};
}

// One comparison: each kernel's test MSE printed, the weights of query
// x_test[25] over the training keys drawn, and the predictions drawn.
std::vector<double> compare(lesson::Lesson& lesson, const lesson::ToyData& data, const std::vector<Kernel>& kernels,
                            const std::string& stem, const std::string& what) {
  const int64_t query = 25;
  std::vector<double> mses;
  std::vector<viz::Series> weight_lines,
      predictions = {{"truth f(x)", data.x_test.to_vector(), data.y_truth.to_vector()}};
  lesson.print("  {:<14} {:<22} {:>9}\n", what, "K(d)", "test MSE");
  for (const Kernel& kernel : kernels) {
    Pooled p = nadaraya_watson(data, kernel);
    Tensor row_sums = kernel.K(data.x_test.reshape({-1, 1}) - data.x_train.reshape({1, -1})).sum(-1);  // (50,)
    const double empty = sum(masked_fill(ones_like(row_sums), gt(row_sums, 0.0f), 0)).item();
    mses.push_back(mse_loss(p.y_hat, data.y_truth).item());
    lesson.print("  {:<14} {:<22} {:>9.4f}{}\n", kernel.name, kernel.formula, mses.back(),
                 empty > 0 ? fmt::format("  ({} queries have no key within reach: no prediction)", empty) : "");
    weight_lines.push_back({kernel.name, data.x_train.to_vector(), slice(p.weights, 0, query, query + 1).to_vector()});
    predictions.push_back({kernel.name, data.x_test.to_vector(), p.y_hat.to_vector()});
  }
  predictions.push_back({"training points", data.x_train.to_vector(), data.y_train.to_vector(), /*points=*/true});
  lesson.line_plot(stem + "_weights.svg", weight_lines,
                   {.title = fmt::format("Weights of the query x = {:.1f} over the training keys, one line per {}",
                                         data.x_test.at({query}), what),
                    .xlabel = "training inputs x_i (keys)",
                    .ylabel = "attention weight"});
  lesson.line_plot(
      stem + "_predictions.svg", predictions,
      {.title = fmt::format("Nadaraya–Watson predictions, one line per {}", what), .xlabel = "x", .ylabel = "y"});
  return mses;
}

// d2l's two comparisons: the kernels, then the widths of the Gaussian.
struct Comparisons {
  std::vector<double> kernel_mse, sigmas, width_mse;
};
Comparisons compare_kernels_and_widths(lesson::Lesson& lesson, const lesson::ToyData& data) {
  lesson.section("Other kernels (d2l): Gaussian, boxcar, constant, Epanechnikov");
  lesson.print(
      "Any K(d) ≥ 0 that falls with the distance d = x - xᵢ makes weights K / Σ K. The constant\n"
      "kernel weighs every key alike: it is lesson 01's average pooling.\n");
  Comparisons c;
  c.kernel_mse = compare(lesson, data, d2l_kernels(), "kernels", "kernel");

  lesson.section("Kernel widths (d2l): the Gaussian exp(-d²/(2σ²))");
  lesson.print("A narrow kernel follows the noise of the nearest points; a wide one smooths f away.\n");
  c.sigmas = {0.1, 0.2, 0.5, 1.0};
  std::vector<Kernel> widths;
  for (double s : c.sigmas) widths.push_back(gaussian_with_width(static_cast<float>(s)));
  c.width_mse = compare(lesson, data, widths, "widths", "width");
  return c;
}

size_t argmin(const std::vector<double>& v) {
  return static_cast<size_t>(std::min_element(v.begin(), v.end()) - v.begin());
}

// 2、非参数注意力汇聚 with lesson 02's Gaussian, written as a softmax.
Tensor gaussian_weights(lesson::Lesson& lesson, const lesson::ToyData& data) {
  lesson.section("2、非参数注意力汇聚: the attention weights");
  lesson.print(
      "Nadaraya and Watson weight each value yᵢ by how close its key xᵢ is to the query x:\n"
      "  α(x, xᵢ) = K(x - xᵢ) / Σⱼ K(x - xⱼ),  and with K Gaussian,  α(x, ·) = softmax(-(x - xᵢ)²/2)\n"
      "(the 1/√(2π) of K cancels between numerator and denominator). Nothing here is learned.\n");
  const int64_t n_test = data.x_test.size(0), n_train = data.x_train.size(0);
  Tensor queries = data.x_test.reshape({n_test, 1});  // (50,) -> (50, 1)
  Tensor keys = data.x_train.reshape({1, n_train});   // (n,) -> (1, n)
  Tensor diff = queries - keys;                       // (50, 1) - (1, n) -> (50, n), broadcast
  Tensor weights = (-(diff * diff) / 2).softmax(-1);  // (50, n), each row sums to 1
  lesson.print("queries {} - keys {} -> differences {} -> weights {}\n", queries.shape(), keys.shape(), diff.shape(),
               weights.shape());
  lesson.print("weights of query x = {:.1f} over the first 8 keys: {}\n", data.x_test.at({25}),
               slice(slice(weights, 0, 25, 26), 1, 0, 8));
  lesson.print("row sums (first 5): {}\n", weights.sum(1).slice(0, 0, 5));
  lesson.heatmap("attention_weights.svg", weights,
                 {.title = "Nadaraya–Watson attention weights",
                  .xlabel = "training inputs x_i (keys, sorted)",
                  .ylabel = "test inputs x (queries)"});
  return weights;
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 2);
  int64_t n_train = 50;
  lesson.option("--n-train", n_train, "number of training points (keys and values)", {.min = 2, .max = 10'000});
  lesson.start();
  lesson.print(
      "This lesson replaces lesson 01's flat average by attention: each test point weighs the training\n"
      "points by their distance to it. It shows the weights, the prediction and its error, then compares\n"
      "kernels and kernel widths as d2l does.\n");

  Generator gen(lesson.seed());
  lesson::ToyData data = lesson::toy_data(n_train, gen);  // the data of lesson 01 (same seed, same points)
  const int64_t n_test = data.x_test.size(0);

  lesson.section("1、平均汇聚, again: the number to beat");
  Tensor average = data.y_train.mean().expand({n_test});  // (n,) -> () -> (50,)
  Tensor average_mse = mse_loss(average, data.y_truth);   // (50,) x (50,) -> ()
  lesson.print("average pooling (lesson 01): test MSE {:.4f}\n", average_mse.item());

  Tensor weights = gaussian_weights(lesson, data);

  lesson.section("The prediction: f(x) = Σᵢ α(x, xᵢ) yᵢ");
  Tensor y_hat = weights.matmul(data.y_train);  // (50, n) x (n,) -> (50,)
  Tensor mse = mse_loss(y_hat, data.y_truth);   // (50,) x (50,) -> ()
  lesson.print("y_hat {}\ntest MSE against the noiseless truth f(x_test):\n", y_hat.shape());
  lesson.print("  average pooling (lesson 01)    {:.4f}\n", average_mse.item());
  lesson.print("  Nadaraya–Watson (this lesson)  {:.4f}\n", mse.item());
  lesson.line_plot("prediction.svg",
                   {{"truth f(x)", data.x_test.to_vector(), data.y_truth.to_vector()},
                    {"Nadaraya–Watson", data.x_test.to_vector(), y_hat.to_vector()},
                    {"training points", data.x_train.to_vector(), data.y_train.to_vector(), /*points=*/true}},
                   {.title = "Nadaraya–Watson: the prediction against the truth", .xlabel = "x", .ylabel = "y"});

  Comparisons c = compare_kernels_and_widths(lesson, data);
  lesson.result("test_mse", static_cast<double>(mse.item()));
  lesson.result("average_pooling_test_mse", static_cast<double>(average_mse.item()));
  lesson.result("x_train", data.x_train);  // the keys and values: every number above follows from them
  lesson.result("y_train", data.y_train);
  lesson.result("weights", weights);
  lesson.result("prediction", y_hat);
  lesson.result("kernel_test_mse", c.kernel_mse);  // Gaussian, boxcar, constant, Epanechnikov
  lesson.result("widths", c.sigmas);
  lesson.result("width_test_mse", c.width_mse);

  const size_t best_kernel = argmin(c.kernel_mse), best_width = argmin(c.width_mse);
  lesson.print(
      "\nWhat to remember: attention pooling weighs each training value by a kernel of its key's distance to\n"
      "the query. The Gaussian's weights form a band along the diagonal, and the prediction follows f(x).\n");
  return lesson.finish(
      fmt::format("The test MSE falls from {:.4f} (average pooling) to {:.4f}. Of d2l's kernels the {} did\n"
                  "best here (test MSE {:.4f}); of the widths, σ = {} ({:.4f}). Lesson 03 learns the width.",
                  average_mse.item(), mse.item(), d2l_kernels()[best_kernel].name, c.kernel_mse[best_kernel],
                  c.sigmas[best_width], c.width_mse[best_width]));
}
