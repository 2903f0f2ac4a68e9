// Bad and extreme input for the data readers, TensorDataset and DataLoader:
// undefined and 0-d tensors, batch sizes at the end of int64, zero-width rows,
// labels whose class count overflows, empty files, bytes that are not UTF-8,
// and padding lengths no machine can hold.
#include <doctest/doctest.h>
#include <qkv/data/dataloader.hpp>
#include <qkv/qkv.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "datasets/fixtures.hpp"
#include "hardening/bad_input.hpp"

using namespace qkv;
using qkv::test::BadInput;
using qkv::test::check_bad_inputs;
using qkv::test::temp_file;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
}  // namespace

TEST_CASE("hardening/data: bad input to TensorDataset and DataLoader") {
  check_bad_inputs({
      {"TensorDataset: an undefined Tensor", [] { data::TensorDataset<Tensor>{Tensor()}; },
       "TensorDataset: tensor 0 is undefined"},
      {"TensorDataset: an undefined IntTensor", [] { data::TensorDataset<Tensor, IntTensor>(ones({2}), IntTensor()); },
       "TensorDataset: tensor 1 is undefined"},
      {"TensorDataset: a 0-d tensor", [] { data::TensorDataset<Tensor>{scalar_tensor(1)}; }, "tensor 0 is a scalar"},
      {"TensorDataset: first dims differ", [] { data::TensorDataset<Tensor, IntTensor>(ones({2}), int_tensor({1})); },
       "first dims 1 and 2 differ"},
      {"DataLoader: batch_size 0", [] { data::DataLoader(data::TensorDataset(ones({2})), {.batch_size = 0}); },
       "DataLoader: batch_size 0 must be positive"},
      {"DataLoader: batch_size INT64_MIN",
       [] { data::DataLoader(data::TensorDataset(ones({2})), {.batch_size = std::numeric_limits<int64_t>::min()}); },
       "must be positive"},
  });
}

TEST_CASE("hardening/data: DataLoader at the extremes") {
  // 10 examples with ids 0 … 9.
  data::TensorDataset dataset(arange(10), arange_int(0, 10));

  SUBCASE("batch_size INT64_MAX is one batch of every example, as PyTorch's len(loader) = ceil(10 / B) = 1") {
    data::DataLoader loader(dataset, {.batch_size = kMax});
    CHECK(loader.size() == 1);
    int64_t batches = 0;
    for (auto& [X, y] : loader) {
      CHECK(y.to_vector() == arange_int(0, 10).to_vector());
      CHECK(X.shape() == Shape{10});
      ++batches;
    }
    CHECK(batches == 1);
  }
  SUBCASE("batch_size INT64_MAX with drop_last is no batch: floor(10 / B) = 0") {
    data::DataLoader loader(dataset, {.batch_size = kMax, .drop_last = true});
    CHECK(loader.size() == 0);
    CHECK(loader.begin() == loader.end());
  }
  SUBCASE("rows of width 0 (an (N, 0) tensor) batch to (B, 0)") {
    data::DataLoader loader(data::TensorDataset(zeros({3, 0}), IntTensor::empty({3, 0})), {.batch_size = 2});
    std::vector<Shape> shapes;
    for (auto& [X, y] : loader) {
      shapes.push_back(X.shape());
      CHECK(y.shape() == X.shape());
    }
    CHECK(shapes == std::vector<Shape>{Shape{2, 0}, Shape{1, 0}});
  }
}
