// The caching allocator behind every tensor's Storage.
//
// Why cache: an attention call allocates the same few buffers on every call
// (scores [B, T, T], weights, the output). Handed back to malloc, a large
// block is either unmapped (the next call page-faults and the kernel zeroes
// every page again) or kept on malloc's heap, where calloc must memset it.
// Keeping freed blocks here and handing them out again skips both, and lets
// an op whose kernel writes every output element skip zeroing altogether
// (Init::None).
//
// Size classes: a request is rounded up to a class (64 bytes, 128, 192, 256;
// above 256 bytes four classes per power of two: 2^k, 1.25 2^k, 1.5 2^k,
// 1.75 2^k), and a freed block waits in its class's free list. A request is
// served by a block of exactly its class, so lookup is one map find, and
// rounding wastes at most 25% of a block (at most 63 bytes below 256).
//
// The cap: cached (free) bytes never exceed cache_limit (default 256 MiB;
// set_allocator_cache_limit). A block freed while the cache is full goes
// straight back to the OS, so memory does not grow without bound when shapes
// keep changing; empty_cache() returns every cached block at once.
//
// Threads: one mutex guards the free lists and statistics. Blocks may be
// allocated on one thread and freed on another (the kernels' thread pool).
//
// What PyTorch does differently: its CPU allocator (c10::alloc_cpu) does not
// cache at all; it calls posix_memalign (64-byte aligned) per tensor and
// relies on glibc malloc's own free lists, and zero-fills only where an op
// asks (torch.zeros). Its CUDA allocator is the caching one: it rounds to 512
// bytes, splits large blocks and keeps everything until empty_cache(). Ours is
// that idea sized for CPU: no splitting, exact classes, and a cap.
//
// AddressSanitizer: in ASan builds (-fsanitize=address, e.g. ATTOGRAD_SANITIZE)
// a cached block is poisoned with ASan's manual poisoning interface, so a
// use-after-free of a tensor's buffer is still reported while the block waits
// in the cache; the rounding slack past the requested bytes stays poisoned
// while the block is in use, so overruns into it are reported too. (A read
// through a stale pointer after the block was handed out again cannot be
// caught: that is the price of reuse.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace ag {

// A snapshot of the allocator, for tests and benchmarks.
struct AllocatorStats {
  size_t bytes_in_use = 0;  // bytes of blocks handed out (rounded to their class)
  size_t bytes_cached = 0;  // bytes of free blocks kept for reuse
  size_t cache_limit = 0;   // bytes_cached never exceeds this
  uint64_t hits = 0;        // requests served from the cache
  uint64_t misses = 0;      // requests that went to the OS
};
AllocatorStats allocator_stats();

// Returns every cached block to the OS (blocks in use are not affected).
void empty_cache();
// Caps the cached bytes (0 turns caching off); frees cached blocks past the new cap.
void set_allocator_cache_limit(size_t bytes);

// How the bytes of a new block start out.
enum class Init { Zero, None };  // None: whatever was there (the caller writes every byte)

namespace detail {

// The class a request of `nbytes` is rounded up to (see the header comment).
size_t size_class(size_t nbytes);

// One block: `data` is 64-byte aligned and holds at least the requested bytes.
struct Block {
  std::byte* data = nullptr;
  void* allocation = nullptr;  // what malloc/calloc returned (data is inside it)
  size_t size = 0;             // the size class
};
// A block of at least `nbytes`, zero-filled for Init::Zero. Out of memory
// throws ag::Error("op: out of memory allocating N bytes").
Block allocate(size_t nbytes, Init init, const char* op);
// Gives `block` back: cached, or freed when the cache is full.
void deallocate(const Block& block);

}  // namespace detail

}  // namespace ag
