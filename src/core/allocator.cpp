// The caching allocator of allocator.hpp: free lists by size class behind
// one mutex, filled by the blocks dying tensors give back.
#include <qkv/core/allocator.hpp>
#include <qkv/core/error.hpp>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>  // malloc_trim
#endif

namespace qkv {

namespace {

constexpr size_t kAlignment = 64;  // a cache line; also what aligned_alloc needs the size to be a multiple of

// Under the sanitizers every block goes straight back to the system, so that
// AddressSanitizer sees each use after free and each overflow.
#if defined(QKV_SANITIZE)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif

size_t round_up(size_t bytes, size_t step) { return (bytes + step - 1) / step * step; }

class Cache {
 public:
  // A block of exactly `bytes` (a size class): a cached one if its free list
  // has one, else a fresh one from the system.
  void* take(size_t bytes) {
    if (kCaching) {
      std::lock_guard lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        void* block = it->second.back();
        it->second.pop_back();
        stats_.cached_bytes -= static_cast<int64_t>(bytes);
        stats_.cached_blocks -= 1;
        count_allocated(bytes);
        return block;
      }
    }
    // Outside the lock: the system may take a while (page tables, mmap).
    void* block = std::aligned_alloc(kAlignment, bytes);
    if (block == nullptr) {  // out of memory: what the cache keeps may make room
      release_all();
      block = std::aligned_alloc(kAlignment, bytes);
      if (block == nullptr) throw std::bad_alloc();
    }
    std::lock_guard lock(mutex_);
    count_allocated(bytes);
    return block;
  }

  // A dying tensor's block, back onto its class's free list.
  void give_back(void* block, size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    stats_.allocated_bytes -= static_cast<int64_t>(bytes);
    if (kCaching) {
      try {
        free_[bytes].push_back(block);
        stats_.cached_bytes += static_cast<int64_t>(bytes);
        stats_.cached_blocks += 1;
        return;
      } catch (const std::bad_alloc&) {
        // No memory for the free list's entry: free the block instead.
      }
    }
    std::free(block);
  }

  // Free every cached block, then ask malloc to return what it can to the
  // kernel (glibc keeps small freed blocks in its own heap otherwise).
  void release_all() {
    std::unordered_map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard lock(mutex_);
      blocks.swap(free_);
      stats_.cached_bytes = 0;
      stats_.cached_blocks = 0;
    }
    for (auto& [bytes, list] : blocks)
      for (void* block : list) std::free(block);
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
  }

  void reset_peak() {
    std::lock_guard lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }

  MemoryStats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  void count_allocated(size_t bytes) {  // with mutex_ held
    stats_.allocated_bytes += static_cast<int64_t>(bytes);
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  }

  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> its free blocks
  MemoryStats stats_;
};

// NOTE: made once and never destroyed, on purpose: a tensor in static
// storage may die after main returns, after a static Cache would have been
// destroyed, and its block must still have somewhere to go.
Cache& cache() {
  static Cache* const instance = new Cache;
  return *instance;
}

}  // namespace

size_t size_class(size_t bytes) {
  if (bytes > std::numeric_limits<size_t>::max() / 2) return bytes;  // can never be allocated; rounding would overflow
  if (bytes <= 256) return std::max(kAlignment, round_up(bytes, kAlignment));  // 64, 128, 192, 256
  // Four classes per power of two: in (2ᵏ, 2ᵏ⁺¹], steps of 2ᵏ/4. The step is
  // a power of two of at least 64, so every class is a multiple of 64.
  const size_t step = std::bit_floor(bytes - 1) / 4;
  return round_up(bytes, step);
}

MemoryBlock::MemoryBlock(size_t bytes) : size_(size_class(bytes)) {
  try {
    data_ = cache().take(size_);
  } catch (const std::bad_alloc&) {
    fail("MemoryBlock: out of memory allocating {} bytes", bytes);
  }
}

MemoryBlock::MemoryBlock(MemoryBlock&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(other.size_) {}

MemoryBlock& MemoryBlock::operator=(MemoryBlock&& other) noexcept {
  if (this != &other) {
    if (data_) cache().give_back(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = other.size_;
  }
  return *this;
}

MemoryBlock::~MemoryBlock() {
  if (data_) cache().give_back(data_, size_);
}

std::shared_ptr<void> allocate_block(size_t bytes) {
  std::shared_ptr<MemoryBlock> block;
  try {
    block = std::make_shared<MemoryBlock>(bytes);
  } catch (const std::exception&) {  // the block's Error, or no memory for the shared_ptr's own count
    fail("allocate_block: out of memory allocating {} bytes", bytes);
  }
  return std::shared_ptr<void>(block,
                               block->data());  // the aliasing constructor: owns the MemoryBlock, points at its bytes
}

void empty_cache() { cache().release_all(); }

MemoryStats memory_stats() { return cache().stats(); }

void reset_peak_memory_stats() { cache().reset_peak(); }

}  // namespace qkv
