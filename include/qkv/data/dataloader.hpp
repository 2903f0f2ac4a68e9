// TensorDataset and DataLoader: minibatches of examples, PyTorch's names
// (torch.utils.data), as d2l's load_array uses them (d2l §3.3).
//
// A TensorDataset is a few tensors whose first dim is the example index N;
// each may be a Tensor (features) or an IntTensor (ids, labels, lengths).
// A DataLoader cuts an epoch into batches of batch_size examples (in order,
// or in a fresh random order every epoch), and a batch is the same tensors
// with first dim B instead of N. So a loop reads like d2l's
//   for X, X_valid_len, Y, Y_valid_len in data_iter:
// with C++'s structured bindings:
//
//   data::TensorDataset dataset(src, src_valid_len, tgt, tgt_valid_len);   // (N, T), (N), (N, T), (N)
//   data::DataLoader loader(dataset, {.batch_size = 64, .shuffle = true}, gen);
//   for (auto& [X, X_valid_len, Y, Y_valid_len] : loader) { ... }        // (B, T), (B), (B, T), (B)
//
// Why a tuple and not a struct of named fields or a list of tensors: the
// names belong to the lesson (X, y, src, …), and bindings give them at the
// point of use; the types (Tensor or IntTensor) are checked by the compiler;
// and nothing is reached by a position like ints[0].
//
// Shuffling: every call of begin() (every range-for) starts an epoch and,
// with shuffle, draws a new permutation from the Generator, so epochs differ
// from each other but a run is reproducible from the generator's seed.
// NOTE: the loader keeps a pointer to that Generator: it must outlive the
// loader (default_generator() always does).
//
// What is left out on purpose: worker threads, samplers, collate functions,
// datasets that are not in memory.
#pragma once
#include <qkv/core/error.hpp>
#include <qkv/core/generator.hpp>
#include <qkv/core/tensor.hpp>

#include <algorithm>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

namespace qkv::data {

// --- the non-template parts (src/data/dataloader.cpp) ----------------------------
namespace detail {
// Rows `indices` of x along dim 0, as a new tensor without history: x[indices].
Tensor take_rows(const Tensor& x, const std::vector<int64_t>& indices);
IntTensor take_rows(const IntTensor& x, const std::vector<int64_t>& indices);
// The number of examples, after checking that every tensor is defined, has a
// first dim and agrees with the others; shapes[i] is tensor i's shape or
// nullptr when undefined.
int64_t num_examples(const std::vector<const Shape*>& shapes);
// 0, 1, …, n-1, or a uniform random permutation of it drawn from gen (Fisher–Yates).
std::vector<int64_t> epoch_order(int64_t n, bool shuffle, Generator& gen);
}  // namespace detail

// --- TensorDataset -------------------------------------------------------------
template <class... Ts>
class TensorDataset {
  static_assert(sizeof...(Ts) > 0, "TensorDataset: give it at least one tensor");
  static_assert(((std::is_same_v<Ts, Tensor> || std::is_same_v<Ts, IntTensor>)&&...),
                "TensorDataset: every field is a Tensor or an IntTensor");

 public:
  explicit TensorDataset(Ts... tensors) : tensors_(std::move(tensors)...) {
    size_ = std::apply([](const auto&... t) { return detail::num_examples({(t.defined() ? &t.shape() : nullptr)...}); },
                       tensors_);
  }

  int64_t size() const { return size_; }  // N, PyTorch's len(dataset)
  const std::tuple<Ts...>& tensors() const { return tensors_; }

  // The examples at `indices`, stacked: every field with first dim indices.size().
  std::tuple<Ts...> rows(const std::vector<int64_t>& indices) const {
    return std::apply([&](const auto&... t) { return std::tuple<Ts...>(detail::take_rows(t, indices)...); }, tensors_);
  }

 private:
  std::tuple<Ts...> tensors_;
  int64_t size_ = 0;
};

// --- DataLoader ----------------------------------------------------------------
struct DataLoaderOptions {
  int64_t batch_size = 1;  // B; must be positive
  bool shuffle = false;    // a fresh random order every epoch
  bool drop_last = false;  // drop the last batch if it has fewer than batch_size examples
};

template <class... Ts>
class DataLoader {
 public:
  using Batch = std::tuple<Ts...>;

  DataLoader(TensorDataset<Ts...> dataset, DataLoaderOptions options, Generator& gen = default_generator())
      : dataset_(std::move(dataset)), options_(options), gen_(&gen) {
    if (options.batch_size <= 0) fail("DataLoader: batch_size {} must be positive", options.batch_size);
  }

  // Batches per epoch, PyTorch's len(loader): N / B rounded up, or down with drop_last.
  // (Rounded up as n / b plus one for a remainder: n + b - 1 overflows for a huge b.)
  int64_t size() const {
    int64_t n = dataset_.size(), b = options_.batch_size;
    return n / b + (!options_.drop_last && n % b != 0);
  }
  const TensorDataset<Ts...>& dataset() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  class iterator {
   public:
    Batch& operator*() { return batch_; }
    Batch* operator->() { return &batch_; }
    iterator& operator++() {
      ++index_;
      load();
      return *this;
    }
    bool operator==(const iterator& other) const { return index_ == other.index_; }

   private:
    friend class DataLoader;
    iterator(const DataLoader* loader, std::shared_ptr<const std::vector<int64_t>> order, int64_t index)
        : loader_(loader), order_(std::move(order)), index_(index) {
      load();
    }
    // Batch index_ is the examples order[index_·B, min((index_+1)·B, N)).
    // index_·B < N here, so it fits; the end is taken as a count, min(B, N - start),
    // since (index_+1)·B may not fit for a huge B.
    void load() {
      if (!order_ || index_ >= loader_->size()) return;
      int64_t b = loader_->options_.batch_size, n = static_cast<int64_t>(order_->size());
      int64_t start = index_ * b;
      auto first = order_->begin() + start;
      batch_ = loader_->dataset_.rows(std::vector<int64_t>(first, first + std::min(b, n - start)));
    }

    const DataLoader* loader_;
    std::shared_ptr<const std::vector<int64_t>> order_;  // this epoch's order of the examples
    int64_t index_;                                      // which batch of the epoch
    Batch batch_;
  };

  // A new epoch: with shuffle, this draws a new order from the generator.
  iterator begin() {
    auto order =
        std::make_shared<const std::vector<int64_t>>(detail::epoch_order(dataset_.size(), options_.shuffle, *gen_));
    return iterator(this, std::move(order), 0);
  }
  iterator end() const { return iterator(this, nullptr, size()); }

 private:
  TensorDataset<Ts...> dataset_;
  DataLoaderOptions options_;
  Generator* gen_;  // NOTE: not owned; see the header comment
};

}  // namespace qkv::data
