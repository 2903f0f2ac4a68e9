// data::TensorDataset and data::DataLoader: batches in order and shuffled,
// every example once per epoch, reproducible shuffles, drop_last, errors.
#include <doctest/doctest.h>

#include <qkv/data/dataloader.hpp>
#include <qkv/qkv.hpp>

#include <algorithm>
#include <numeric>

using namespace qkv;

namespace {
// N examples: features X[i] = (i, 10i, 100i) as floats, ids y[i] = i.
struct Toy {
  Tensor X;
  IntTensor y;
  explicit Toy(int64_t n) {
    std::vector<float> x;
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < n; ++i) {
      x.insert(x.end(), {float(i), 10.0f * float(i), 100.0f * float(i)});
      ids.push_back(i);
    }
    X = tensor(x, {n, 3});
    y = int_tensor(ids, {n});
  }
};

// The ids of each batch of one epoch; checks that X's rows go with them.
std::vector<std::vector<int64_t>> epoch(data::DataLoader<Tensor, IntTensor>& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (auto& [X, y] : loader) {  // (B, 3), (B)
    REQUIRE(X.shape() == Shape{y.size(0), 3});
    for (int64_t b = 0; b < y.size(0); ++b) CHECK(X.at({b, 1}) == 10.0f * float(y.at({b})));
    batches.push_back(y.to_vector());
  }
  return batches;
}

std::vector<int64_t> sorted_ids(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}
}  // namespace

TEST_CASE("data/dataloader: in order, last partial batch, drop_last") {
  Toy toy(10);
  data::TensorDataset dataset(toy.X, toy.y);
  CHECK(dataset.size() == 10);

  SUBCASE("batches of 4, 4 and 2") {
    data::DataLoader loader(dataset, {.batch_size = 4});
    CHECK(loader.size() == 3);
    using B = std::vector<std::vector<int64_t>>;
    CHECK(epoch(loader) == B{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
    CHECK(epoch(loader) == B{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});  // every epoch the same
  }
  SUBCASE("drop_last drops the 2") {
    data::DataLoader loader(dataset, {.batch_size = 4, .drop_last = true});
    CHECK(loader.size() == 2);
    CHECK(epoch(loader) == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  }
  SUBCASE("batch_size dividing N: drop_last changes nothing") {
    data::DataLoader a(dataset, {.batch_size = 5}), b(dataset, {.batch_size = 5, .drop_last = true});
    CHECK(a.size() == 2);
    CHECK(epoch(a) == epoch(b));
  }
  SUBCASE("batch_size above N: one batch, or none with drop_last") {
    data::DataLoader a(dataset, {.batch_size = 64}), b(dataset, {.batch_size = 64, .drop_last = true});
    CHECK(epoch(a) == std::vector<std::vector<int64_t>>{iota(10)});
    CHECK(b.size() == 0);
    CHECK(epoch(b).empty());
  }
  SUBCASE("an empty dataset gives no batches") {
    Toy none(0);
    data::DataLoader loader(data::TensorDataset(none.X, none.y), {.batch_size = 3, .shuffle = true});
    CHECK(loader.size() == 0);
    CHECK(epoch(loader).empty());
  }
}

TEST_CASE("data/dataloader: shuffle: each example once, a new order each epoch, reproducible") {
  Toy toy(23);
  Generator gen(42);
  data::DataLoader loader(data::TensorDataset(toy.X, toy.y), {.batch_size = 5, .shuffle = true}, gen);
  auto e1 = epoch(loader), e2 = epoch(loader), e3 = epoch(loader);
  for (const auto* e : {&e1, &e2, &e3}) {
    CHECK(e->size() == 5);
    CHECK(e->back().size() == 3);  // 23 = 4·5 + 3
    CHECK(sorted_ids(*e) == iota(23));
  }
  CHECK(e1 != e2);
  CHECK(e2 != e3);
  CHECK(e1 != std::vector<std::vector<int64_t>>{iota(5)});  // not left in order

  // The same seed gives the same epochs; another seed does not.
  Generator again(42), other(43);
  data::DataLoader same(data::TensorDataset(toy.X, toy.y), {.batch_size = 5, .shuffle = true}, again);
  data::DataLoader different(data::TensorDataset(toy.X, toy.y), {.batch_size = 5, .shuffle = true}, other);
  CHECK(epoch(same) == e1);
  CHECK(epoch(same) == e2);
  CHECK(epoch(different) != e1);

  SUBCASE("with drop_last: whole batches of distinct examples") {
    data::DataLoader dropping(data::TensorDataset(toy.X, toy.y), {.batch_size = 5, .shuffle = true, .drop_last = true},
                              gen);
    auto e = epoch(dropping);
    CHECK(e.size() == 4);
    auto ids = sorted_ids(e);
    CHECK(ids.size() == 20);
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  }
}

TEST_CASE("data/dataloader: four IntTensor fields, as d2l's translation batches") {
  IntTensor src = int_tensor({1, 2, 3, 4, 5, 6}, {3, 2}), src_len = int_tensor({1, 2, 2});
  IntTensor tgt = int_tensor({7, 8, 9, 10, 11, 12}, {3, 2}), tgt_len = int_tensor({2, 1, 2});
  data::DataLoader loader(data::TensorDataset(src, src_len, tgt, tgt_len), {.batch_size = 2});
  int64_t batches = 0;
  for (auto& [X, X_valid_len, Y, Y_valid_len] : loader) {
    if (batches == 0) {
      CHECK(X.to_vector() == std::vector<int64_t>{1, 2, 3, 4});
      CHECK(X_valid_len.to_vector() == std::vector<int64_t>{1, 2});
      CHECK(Y.shape() == Shape{2, 2});
      CHECK(Y_valid_len.to_vector() == std::vector<int64_t>{2, 1});
    } else {
      CHECK(X.to_vector() == std::vector<int64_t>{5, 6});
      CHECK(Y.to_vector() == std::vector<int64_t>{11, 12});
    }
    ++batches;
  }
  CHECK(batches == 2);
}

TEST_CASE("data/dataloader: batches are copies") {
  Toy toy(4);
  data::DataLoader loader(data::TensorDataset(toy.X, toy.y), {.batch_size = 2});
  for (auto& [X, y] : loader) {
    X.data()[0] = -1.0f;
    y.data()[0] = -1;
  }
  CHECK(toy.X.at({0, 0}) == 0.0f);
  CHECK(toy.y.at({2}) == 2);
}

TEST_CASE("data/dataloader: errors") {
  Toy toy(5);
  data::TensorDataset dataset(toy.X, toy.y);
  CHECK_THROWS_WITH_AS(data::DataLoader(dataset, {.batch_size = 0}), "DataLoader: batch_size 0 must be positive",
                       Error);
  CHECK_THROWS_WITH_AS(data::DataLoader(dataset, {.batch_size = -3}), "DataLoader: batch_size -3 must be positive",
                       Error);
  CHECK_THROWS_WITH_AS(data::TensorDataset(toy.X, toy.y, int_tensor({1, 2, 3, 4})),
                       "TensorDataset: tensor 2 has shape (4) but tensor 0 has shape (5, 3): first dims 4 and 5 differ",
                       Error);
  CHECK_THROWS_WITH_AS(data::TensorDataset(toy.X, IntTensor()), "TensorDataset: tensor 1 is undefined", Error);
  CHECK_THROWS_WITH_AS(data::TensorDataset(scalar_tensor(1.0f)),
                       "TensorDataset: tensor 0 is a scalar; every tensor needs a first dim N", Error);
}
