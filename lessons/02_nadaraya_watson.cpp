// Lesson 02 · Nadaraya–Watson kernel regression
//
// Walks through:
//   001 注意力汇聚, 2、非参数注意力汇聚
//     f(x) = Σᵢ softmax(-(x - xᵢ)²/2) yᵢ     (the Gaussian kernel K(u) = exp(-u²/2)/√(2π))
//
// The learner sees the same data as lesson 01, the attention weights of every
// test query over every training key (a 50 × 50 heatmap: a bright band along
// the diagonal, since a query looks at the keys near it), the prediction curve
// that now follows f(x), and its test MSE printed beside lesson 01's.
//
// Run: build/release/lessons/02_nadaraya_watson [--seed S] [--n-train N] [--out DIR]
#include <qkv/qkv.hpp>

#include "lesson.hpp"
#include "toy_data.hpp"

using namespace qkv;

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 2);
  int64_t n_train = 50;
  lesson.option("--n-train", n_train, "number of training points (keys and values)", {.min = 2, .max = 10'000});
  lesson.start();

  Generator gen(lesson.seed());
  lesson::ToyData data = lesson::toy_data(n_train, gen);  // the data of lesson 01 (same seed, same points)
  const int64_t n_test = data.x_test.size(0);

  lesson.section("1、平均汇聚, again: the number to beat");
  Tensor average = data.y_train.mean().expand({n_test});  // (n,) -> () -> (50,)
  Tensor average_mse = mse_loss(average, data.y_truth);   // (50,) x (50,) -> ()
  lesson.print("average pooling (lesson 01): test MSE {:.4f}\n", average_mse.item());

  lesson.section("2、非参数注意力汇聚: the attention weights");
  lesson.print(
      "Nadaraya and Watson weight each value yᵢ by how close its key xᵢ is to the query x:\n"
      "  α(x, xᵢ) = K(x - xᵢ) / Σⱼ K(x - xⱼ),  and with K Gaussian,  α(x, ·) = softmax(-(x - xᵢ)²/2)\n"
      "(the 1/√(2π) of K cancels between numerator and denominator). Nothing here is learned.\n");
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

  lesson.section("The prediction: f(x) = Σᵢ α(x, xᵢ) yᵢ");
  Tensor y_hat = weights.matmul(data.y_train);  // (50, n) x (n,) -> (50,)
  Tensor mse = mse_loss(y_hat, data.y_truth);   // (50,) x (50,) -> ()
  lesson.print("y_hat {}\n", y_hat.shape());
  lesson.print("test MSE against the noiseless truth f(x_test):\n");
  lesson.print("  average pooling (lesson 01)    {:.4f}\n", average_mse.item());
  lesson.print("  Nadaraya–Watson (this lesson)  {:.4f}\n", mse.item());

  lesson.line_plot("prediction.svg",
                   {{"truth f(x)", data.x_test.to_vector(), data.y_truth.to_vector()},
                    {"Nadaraya–Watson", data.x_test.to_vector(), y_hat.to_vector()},
                    {"training points", data.x_train.to_vector(), data.y_train.to_vector(), /*points=*/true}},
                   {.title = "Nadaraya–Watson: the prediction against the truth", .xlabel = "x", .ylabel = "y"});

  lesson.result("test_mse", static_cast<double>(mse.item()));
  lesson.result("average_pooling_test_mse", static_cast<double>(average_mse.item()));
  lesson.result("x_train", data.x_train);  // the keys and values: every number above follows from them
  lesson.result("y_train", data.y_train);
  lesson.result("weights", weights);
  lesson.result("prediction", y_hat);

  return lesson.finish(
      fmt::format("Nadaraya–Watson attention pooling weighs each training value by a Gaussian of its key's distance\n"
                  "to the query: the weights form a band along the diagonal, the prediction follows f(x), and the\n"
                  "test MSE falls from {:.4f} (average pooling) to {:.4f}. Lesson 03 learns how wide the band is.",
                  average_mse.item(), mse.item()));
}
