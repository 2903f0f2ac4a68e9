// Lesson 01 · attention cues and average pooling
//
// Walks through:
//   000 1.注意力                 why attention: look at what stands out, not at everything
//   003 注意力机制产生的原因      queries (自主性提示), keys (非自主性提示), values (感官输入)
//   001 注意力提示               the two kinds of cue
//   001 注意力汇聚, 1、平均汇聚   f(x) = (1/n) Σᵢ yᵢ, the "dumbest" estimator
//
// The learner sees d2l's toy regression data (50 noisy training points of
// y = 2 sin(x) + x^0.8 + ε), average pooling's prediction, a flat line at the
// mean of the training y, drawn against the truth, and its test MSE: the
// number lessons 02 and 03 will beat.
//
// Run: build/release/lessons/01_average_pooling [--seed S] [--n-train N] [--out DIR]
#include <qkv/qkv.hpp>

#include "lesson.hpp"
#include "toy_data.hpp"

using namespace qkv;

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 1);
  int64_t n_train = 50;
  lesson.option("--n-train", n_train, "number of training points (keys and values)");
  lesson.start();

  lesson.section("注意力 and 注意力提示: queries, keys and values");
  lesson.print(
      "The notes (000 1.注意力, 003, 001 注意力提示) describe attention as a choice among inputs.\n"
      "Non-volitional cues (非自主性提示) are the keys: what stands out in the input by itself.\n"
      "The volitional cue (自主性提示) is the query: what we are looking for.\n"
      "Each key is paired with a value (感官输入), and attention pooling (注意力汇聚) mixes the\n"
      "values with weights that say how well each key matches the query.\n"
      "Without a query there is only pooling: every value gets the same weight. That is this lesson.\n");

  lesson.section("The data: y = 2 sin(x) + x^0.8 + ε");
  Generator gen(lesson.seed());
  lesson::ToyData data = lesson::toy_data(n_train, gen);  // lessons/support/toy_data.cpp
  lesson.print("training x ~ U[0, 5), sorted:  x_train {}  (the keys)\n", data.x_train.shape());
  lesson.print("training y = f(x) + ε, ε ~ N(0, 0.5²):  y_train {}  (the values)\n", data.y_train.shape());
  lesson.print("test x = 0, 0.1, …, 4.9:  x_test {}  (the queries)\n", data.x_test.shape());
  lesson.print("first five training points:\n  x {}\n  y {}\n", slice(data.x_train, 0, 0, 5),
               slice(data.y_train, 0, 0, 5));

  lesson.section("1、平均汇聚: f(x) = (1/n) Σᵢ yᵢ");
  Tensor y_mean = data.y_train.mean();                  // (n,) -> ()
  Tensor y_hat = y_mean.expand({data.x_test.size(0)});  // () -> (50,): the same answer for every query
  lesson.print("mean of the training y: {:.4f}\n", y_mean.item());
  lesson.print("prediction y_hat {}: every entry {:.4f}, whatever the query x is\n", y_hat.shape(), y_mean.item());

  // d2l plots the prediction against the noiseless truth f(x), so the MSE here is
  // measured against f(x_test), not against noisy test labels.
  Tensor mse = mse_loss(y_hat, data.y_truth);  // (50,) x (50,) -> ()
  lesson.print("test MSE against the noiseless truth f(x_test): {:.4f}\n", mse.item());
  lesson.line_plot("prediction.svg",
                   {{"truth f(x)", data.x_test.to_vector(), data.y_truth.to_vector()},
                    {"average pooling", data.x_test.to_vector(), y_hat.to_vector()},
                    {"training points", data.x_train.to_vector(), data.y_train.to_vector(), /*points=*/true}},
                   {.title = "Average pooling: the prediction against the truth", .xlabel = "x", .ylabel = "y"});

  lesson.result("n_train", n_train);
  lesson.result("test_mse", static_cast<double>(mse.item()));
  lesson.result("prediction", y_hat);
  lesson.result("x_train", data.x_train);
  lesson.result("y_train", data.y_train);

  return lesson.finish(
      fmt::format("Average pooling ignores the query: it predicts the mean {:.4f} of the training y for every x,\n"
                  "a flat line far from the curve f(x) (test MSE {:.4f} against f). Lesson 02 lets the query choose.",
                  y_mean.item(), mse.item()));
}
