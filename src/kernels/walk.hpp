// The strided walk: every element of a row-major array, together with the
// element of each of N operands that goes with it, each operand read through
// strides of its own:
//
//   out[i₀, i₁, …]  goes with  operand_k[Σ_d i_d · strides_k[d]]      k < N
//
// It is the one loop behind every op that lines up elements of differently
// laid-out arrays: broadcasting (add, where, the comparisons, masked_fill),
// copies (permute, transpose, expand) and sum_to's choice of what to sum.
//   - a stride of 0 is a broadcast: along that dim the operand repeats one
//     value (a (B, 1) mask against (B, S) scores, an expanded tensor);
//   - a permuted operand has its dims' strides in the new order;
//   - the walked array itself (out) is contiguous, row-major.
//
// Before walking, the dims are made as few as they can be:
//   - a dim of size 1 is dropped: its one index adds 0 to every offset;
//   - dims d and d+1 become one dim of size[d]·size[d+1] when every operand
//     steps over the whole of dim d+1 in one step of dim d:
//       strides_k[d] = strides_k[d+1] · size[d+1]      for every k
//     (both 0: a longer broadcast; both present in a contiguous operand: one
//     longer run of it). out always steps so, being contiguous.
//   out (B, T, S), a (B, T, S), b (B, T, 1)       ->  (B·T, S):    a (S, 1), b (1, 0)
//   out (M, N),    a (M, 1),    b (1, N)          ->  (M, N):      a (1, 0), b (0, 1)
//   permute (2, 0, 1) of x (A, B, C): x's strides (1, B·C, C)  ->  (C, A·B): (1, C)
// What is left is a grid of rows: the last merged dim is the row, along
// which an operand steps by its last stride (1 walks, 0 repeats, anything
// else gathers), and the dims before it are stepped through like an
// odometer: step the last, and on wrapping one go back to its start and
// carry into the dim before it. A kernel then runs along each row.
//
// Plain int64 sizes and strides, no xsimd: the ops and the kernels both walk
// with it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace qkv::kernels {

template <size_t N>
class StridedWalk {
 public:
  using Offsets = std::array<int64_t, N>;  // one offset (or stride) per operand
  struct Dim {
    int64_t size;
    Offsets stride;
  };

  // sizes: out's dims; strides[k]: operand k's stride along each of them.
  StridedWalk(std::span<const int64_t> sizes, const std::array<std::span<const int64_t>, N>& strides) {
    dims_.reserve(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0) empty_ = true;
      if (sizes[d] == 1) continue;
      Dim next{sizes[d], {}};
      for (size_t k = 0; k < N; ++k) next.stride[k] = strides[k][d];
      if (!dims_.empty() && steps_over(dims_.back(), next)) {
        dims_.back().size *= next.size;
        dims_.back().stride = next.stride;
      } else {
        dims_.push_back(next);
      }
    }
  }

  // The merged dims, outermost first; none when out has one element.
  const std::vector<Dim>& dims() const { return dims_; }
  bool empty() const { return empty_; }  // out has no elements: the walk visits nothing

  // Elements in a row, and operand k's step along it (0 when out has one element).
  int64_t row_length() const { return dims_.empty() ? 1 : dims_.back().size; }
  int64_t row_step(size_t k) const { return dims_.empty() ? 0 : dims_.back().stride[k]; }

  // fn(first, at) for every row in order: `first` is the row's first
  // element in out, at[k] the offset of the same element in operand k.
  template <class Fn>
  void for_each_row(Fn&& fn) const {
    for_each_block(1, fn);
  }

  // The same over blocks of the last `inner` merged dims (a row is a block
  // of 1): copy kernels take the last two dims as one matrix at a time.
  template <class Fn>
  void for_each_block(size_t inner, Fn&& fn) const {
    if (empty_) return;
    const size_t outer = dims_.size() > inner ? dims_.size() - inner : 0;  // the dims the odometer steps
    int64_t block = 1, blocks = 1;
    for (size_t d = 0; d < dims_.size(); ++d) (d < outer ? blocks : block) *= dims_[d].size;
    std::vector<int64_t> index(outer, 0);
    Offsets at{};
    for (int64_t b = 0; b < blocks; ++b) {
      fn(b * block, at);
      for (size_t d = outer; d-- > 0;) {  // odometer: to the next block
        const Dim& dim = dims_[d];
        for (size_t k = 0; k < N; ++k) at[k] += dim.stride[k];
        if (++index[d] < dim.size) break;
        for (size_t k = 0; k < N; ++k) at[k] -= dim.stride[k] * dim.size;  // wrapped: back to its start, carry
        index[d] = 0;
      }
    }
  }

 private:
  // Whether every operand steps over all of `inner` in one step of `outer`.
  static bool steps_over(const Dim& outer, const Dim& inner) {
    for (size_t k = 0; k < N; ++k)
      if (outer.stride[k] != inner.stride[k] * inner.size) return false;
    return true;
  }

  std::vector<Dim> dims_;
  bool empty_ = false;
};

}  // namespace qkv::kernels
