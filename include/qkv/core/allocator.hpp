// Where tensors' numbers live: a caching allocator, as PyTorch's for CUDA.
//
// Every Tensor::empty (and so every op's output) asks for a block of memory,
// and every tensor that dies gives one back. A training step makes and drops
// the same few hundred tensors each time, so the blocks a step frees are
// exactly the ones the next step asks for. Handing them to malloc and back
// costs more than the arithmetic of a small model: glibc returns large freed
// blocks to the kernel, and the next step then takes a page fault per 4 KiB
// and has the kernel zero every page again. The cache keeps freed blocks
// instead, in free lists by size class, and hands them out again:
//   - a request is rounded up to its size class: a multiple of 64 bytes up to
//     256, then four classes per power of two (320, 384, 448, 512, 640, …),
//     so a block is at most 25% larger than asked for, and tensors whose
//     sizes differ a little (the last, shorter batch) share blocks;
//   - a freed block goes onto its class's free list; the next request of
//     that class takes it back, with whatever numbers it held (Tensor::empty
//     is uninitialised, as in PyTorch; zeros() writes the zeros);
//   - nothing is returned to the system until empty_cache() is called, or a
//     request finds the system out of memory (then the cache is emptied and
//     the request tried once more).
// Blocks are aligned to 64 bytes (a cache line, one AVX-512 register).
// The cache is shared by all threads, behind one mutex.
//
// NOTE: under the sanitizers (the QKV_SANITIZE build) there is no cache:
// every block is malloc'ed and freed at once, so AddressSanitizer still
// reports a use after free or an overflow, with the stacks that made them.
//
// What is left out on purpose: splitting and merging blocks (PyTorch's CUDA
// allocator does; size classes are enough for the repeated steps of
// training), per-thread caches, a limit on the cache's size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>

namespace qkv {

// Give every cached free block back to the system, as torch.cuda.empty_cache:
// the memory of live tensors stays theirs. Call it after a phase that used
// memory the rest of the program will not (a large evaluation batch, a
// model that is gone), so that other programs can have it.
void empty_cache();

// What the cache holds, in bytes of size-class blocks (torch.cuda.memory_stats).
struct MemoryStats {
  int64_t allocated_bytes = 0;       // in blocks that live tensors hold
  int64_t cached_bytes = 0;          // in free blocks waiting to be reused
  int64_t peak_allocated_bytes = 0;  // the most allocated_bytes has been
  int64_t cached_blocks = 0;         // how many free blocks the cache holds
};
MemoryStats memory_stats();

// Start peak_allocated_bytes over from what live tensors hold now
// (torch.cuda.reset_peak_memory_stats), so that the peak of one stretch of
// code (a forward and backward) can be read after it.
void reset_peak_memory_stats();

// The bytes a request of `bytes` takes: its size class (see above).
size_t size_class(size_t bytes);

// In Debug and sanitizer builds, Tensor::empty fills its new storage with
// NaN and IntTensor::empty with this value, so that reading an element no
// one wrote shows up: a NaN in a float result, and here the most negative
// int64, which is out of range as an index, a length or a class label and
// prints as -9223372036854775808. Release builds leave the storage as it is.
constexpr int64_t kEmptyPoison = std::numeric_limits<int64_t>::min();

// A block of at least `bytes` (at least one size class, so never null),
// 64-byte aligned, uninitialised, held by one owner and given back to the
// cache when that owner dies or lets go of it: what a tensor's storage keeps
// its numbers in (tensor.hpp). Move-only. Throws qkv::Error naming the
// bytes when the system has no memory left (Tensor::empty's error names the
// shape too).
class MemoryBlock {
 public:
  MemoryBlock() = default;  // no block: data() is null
  explicit MemoryBlock(size_t bytes);
  MemoryBlock(MemoryBlock&& other) noexcept;
  MemoryBlock& operator=(MemoryBlock&& other) noexcept;
  MemoryBlock(const MemoryBlock&) = delete;
  MemoryBlock& operator=(const MemoryBlock&) = delete;
  ~MemoryBlock();

  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;  // its size class
};

// A MemoryBlock shared: it goes back to the cache when the last copy of the
// pointer dies.
std::shared_ptr<void> allocate_block(size_t bytes);

}  // namespace qkv
