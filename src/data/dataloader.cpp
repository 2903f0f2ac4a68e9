// The parts of TensorDataset and DataLoader that do not depend on the field
// types: checking the first dims, the epoch's order, copying rows.
#include <qkv/data/dataloader.hpp>

#include <algorithm>
#include <numeric>

namespace qkv::data::detail {

int64_t num_examples(const std::vector<const Shape*>& shapes) {
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (!shapes[i]) fail("TensorDataset: tensor {} is undefined", i);
    if (shapes[i]->ndim() == 0) fail("TensorDataset: tensor {} is a scalar; every tensor needs a first dim N", i);
  }
  int64_t n = (*shapes[0])[0];
  for (size_t i = 1; i < shapes.size(); ++i) {
    if ((*shapes[i])[0] != n)
      fail("TensorDataset: tensor {} has shape {} but tensor 0 has shape {}: first dims {} and {} differ", i,
           *shapes[i], *shapes[0], (*shapes[i])[0], n);
  }
  return n;
}

// Fisher–Yates: for i = n-1 … 1, swap element i with one drawn uniformly from
// 0 … i. Every permutation comes out with probability 1/n!.
std::vector<int64_t> epoch_order(int64_t n, bool shuffle, Generator& gen) {
  if (n < 0) fail("epoch_order: the number of examples {} must be >= 0", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (shuffle)
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(gen.randint(0, i + 1))]);
  return order;
}

namespace {
// out row r = x row indices[r]; a row is every element after the first dim.
// NOTE: copy_n, not memcpy: rows of width 0 (a (N, 0) tensor) have no
// storage, and memcpy from a null pointer is undefined even for 0 bytes.
template <class T>
void copy_rows(const T* x, int64_t n, int64_t row_size, const std::vector<int64_t>& indices, T* out) {
  for (size_t r = 0; r < indices.size(); ++r) {
    int64_t i = indices[r];
    if (i < 0 || i >= n) fail("DataLoader: example index {} is out of range for {} examples", i, n);
    std::copy_n(x + i * row_size, row_size, out + static_cast<int64_t>(r) * row_size);
  }
}

Shape batch_shape(const Shape& shape, size_t rows) {
  std::vector<int64_t> dims = shape.dims();
  dims[0] = static_cast<int64_t>(rows);
  return Shape(dims);
}
}  // namespace

Tensor take_rows(const Tensor& x, const std::vector<int64_t>& indices) {
  Tensor out = Tensor::empty(batch_shape(x.shape(), indices.size()));
  int64_t n = x.size(0);
  copy_rows(x.data(), n, n == 0 ? 0 : x.numel() / n, indices, out.data());
  return out;
}

IntTensor take_rows(const IntTensor& x, const std::vector<int64_t>& indices) {
  IntTensor out = IntTensor::empty(batch_shape(x.shape(), indices.size()));
  int64_t n = x.size(0);
  copy_rows(x.data(), n, n == 0 ? 0 : x.numel() / n, indices, out.data());
  return out;
}

}  // namespace qkv::data::detail
