// d2l's toy regression data (toy_data.hpp).
#include "toy_data.hpp"

#include <algorithm>
#include <cmath>

namespace qkv::lesson {

float toy_f(float x) { return 2 * std::sin(x) + std::pow(x, 0.8f); }

ToyData toy_data(int64_t n_train, Generator& gen) {
  if (n_train < 2) fail("toy_data: n_train must be at least 2, got {}", n_train);
  std::vector<float> x(static_cast<size_t>(n_train)), y(x.size());
  for (float& xi : x) xi = gen.uniform(0, 5);  // x ~ U[0, 5)
  std::sort(x.begin(), x.end());
  for (size_t i = 0; i < x.size(); ++i) y[i] = toy_f(x[i]) + gen.normal(0, 0.5f);  // + ε, ε ~ N(0, 0.5²)
  ToyData data;
  data.x_train = tensor(x);
  data.y_train = tensor(y);
  std::vector<float> queries(50), truth(50);
  for (size_t i = 0; i < queries.size(); ++i) {
    queries[i] = 0.1f * static_cast<float>(i);  // 0, 0.1, …, 4.9: torch.arange(0, 5, 0.1)
    truth[i] = toy_f(queries[i]);
  }
  data.x_test = tensor(queries);
  data.y_truth = tensor(truth);
  return data;
}

}  // namespace qkv::lesson
