// The caching allocator: size classes, per-class free lists under one mutex,
// a byte cap. Design notes in attograd/allocator.h. It changes when memory is
// returned, never what is computed: reference mode leaves it on.
#include "attograd/allocator.h"

#include <sanitizer/asan_interface.h>  // no-op macros unless built with ASan

#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "attograd/error.h"

namespace ag {

namespace {

// Classes: four of 64 bytes up to 256, then four per power of two up to 2^63
// (4 + 55 * 4 = 224; requests never exceed 2^63 bytes: kMaxNumel * 8).
constexpr size_t kNumClasses = 224;
constexpr size_t kDefaultCacheLimit = size_t{256} << 20;  // 256 MiB

struct SizeClass {
  size_t index;
  size_t size;
};

SizeClass classify(size_t nbytes) {
  if (nbytes <= 256) {
    const size_t units = std::max<size_t>((nbytes + 63) / 64, 1);
    return {units - 1, units * 64};
  }
  const int k = std::bit_width(nbytes - 1) - 1;  // 2^k < nbytes <= 2^(k+1), k >= 8
  const size_t quarter = size_t{1} << (k - 2);   // the classes step by a quarter of 2^k
  const size_t steps = (nbytes - (size_t{1} << k) + quarter - 1) / quarter;  // 1..4
  return {4 + static_cast<size_t>(k - 8) * 4 + steps - 1, (size_t{1} << k) + steps * quarter};
}

void free_block(const detail::Block& block) {
  ASAN_UNPOISON_MEMORY_REGION(block.data, block.size);
  std::free(block.allocation);
}

struct Cache {
  std::mutex mutex;
  std::array<std::vector<detail::Block>, kNumClasses> free_lists;
  AllocatorStats stats{0, 0, kDefaultCacheLimit, 0, 0};

  // Takes cached blocks, largest classes first, until at most `limit` bytes
  // stay cached; returns them for the caller to free outside the lock.
  std::vector<detail::Block> trim_to(size_t limit) {
    std::vector<detail::Block> freed;
    for (size_t c = kNumClasses; c-- > 0 && stats.bytes_cached > limit;) {
      while (!free_lists[c].empty() && stats.bytes_cached > limit) {
        freed.push_back(free_lists[c].back());
        free_lists[c].pop_back();
        stats.bytes_cached -= freed.back().size;
      }
    }
    return freed;
  }
};

// Never destroyed: tensors in static objects may be freed after main returns.
Cache& cache() {
  static Cache* const instance = new Cache;
  return *instance;
}

}  // namespace

AllocatorStats allocator_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

void empty_cache() {
  Cache& c = cache();
  std::vector<detail::Block> freed;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    freed = c.trim_to(0);
  }
  for (const detail::Block& block : freed) free_block(block);
}

void set_allocator_cache_limit(size_t bytes) {
  Cache& c = cache();
  std::vector<detail::Block> freed;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.stats.cache_limit = bytes;
    freed = c.trim_to(bytes);
  }
  for (const detail::Block& block : freed) free_block(block);
}

namespace detail {

size_t size_class(size_t nbytes) {
  return classify(nbytes).size;
}

Block allocate(size_t nbytes, Init init, const char* op) {
  const SizeClass sc = classify(nbytes);
  Cache& c = cache();
  Block block;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    std::vector<Block>& list = c.free_lists[sc.index];
    if (!list.empty()) {
      block = list.back();
      list.pop_back();
      c.stats.bytes_cached -= block.size;
      ++c.stats.hits;
    } else {
      ++c.stats.misses;
    }
    c.stats.bytes_in_use += sc.size;
  }
  if (block.data) {
    // Only the requested bytes become addressable: the slack stays poisoned.
    ASAN_UNPOISON_MEMORY_REGION(block.data, nbytes);
    if (init == Init::Zero) std::memset(block.data, 0, nbytes);
    return block;
  }
  // A fresh block: calloc rather than malloc + memset, because large blocks
  // come from the OS already zeroed. 64 spare bytes align the start.
  block.allocation = init == Init::Zero ? std::calloc(sc.size + 64, 1) : std::malloc(sc.size + 64);
  if (!block.allocation) {
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      c.stats.bytes_in_use -= sc.size;
    }
    std::string message = "out of memory allocating ";
    message.append(std::to_string(nbytes)).append(" bytes");
    detail::throw_error(op, message);
  }
  const auto address = reinterpret_cast<uintptr_t>(block.allocation);
  block.data = reinterpret_cast<std::byte*>((address + 63) / 64 * 64);
  block.size = sc.size;
  ASAN_POISON_MEMORY_REGION(block.data + nbytes, sc.size - nbytes);
  return block;
}

void deallocate(const Block& block) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.stats.bytes_in_use -= block.size;
    if (block.size <= c.stats.cache_limit - c.stats.bytes_cached) {
      // Poisoned while it waits: a use-after-free through the old tensor is reported.
      ASAN_POISON_MEMORY_REGION(block.data, block.size);
      c.free_lists[classify(block.size).index].push_back(block);
      c.stats.bytes_cached += block.size;
      return;
    }
  }
  free_block(block);
}

}  // namespace detail

}  // namespace ag
