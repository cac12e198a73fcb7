// The caching allocator (allocator.h): reuse, the cap, empty_cache, zeroing,
// threads, out of memory. Every test starts from an empty cache with the
// default cap and restores the cap it changes.
#include "attograd/allocator.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "attograd/core.h"
#include "test_util.h"

// The impossible allocations below need ASan's allocator_may_return_null=1:
// test_util.cpp sets it for every test program.

namespace ag {
namespace {

class AllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    limit_ = allocator_stats().cache_limit;
    empty_cache();
  }
  void TearDown() override { set_allocator_cache_limit(limit_); }
  size_t limit_ = 0;
};

TEST_F(AllocatorTest, SizeClassesRoundUpByAtMostAQuarter) {
  EXPECT_EQ(detail::size_class(0), 64u);
  EXPECT_EQ(detail::size_class(1), 64u);
  EXPECT_EQ(detail::size_class(65), 128u);
  EXPECT_EQ(detail::size_class(256), 256u);
  EXPECT_EQ(detail::size_class(257), 320u);
  EXPECT_EQ(detail::size_class(512), 512u);
  EXPECT_EQ(detail::size_class(513), 640u);
  EXPECT_EQ(detail::size_class(size_t{8} << 20), size_t{8} << 20);
  for (size_t n = 1; n < (size_t{1} << 20); n = n * 3 / 2 + 7) {
    const size_t c = detail::size_class(n);
    EXPECT_GE(c, n);
    EXPECT_EQ(c % 64, 0u) << n;
    if (n > 256) {
      EXPECT_LE(c, n + n / 4) << n;
    }
  }
}

TEST_F(AllocatorTest, AFreedBlockIsReused) {
  const AllocatorStats start = allocator_stats();
  const std::byte* first = nullptr;
  {
    Storage s(1000);
    first = s.data();
    EXPECT_EQ(allocator_stats().bytes_in_use, start.bytes_in_use + detail::size_class(1000));
  }
  EXPECT_EQ(allocator_stats().bytes_cached, detail::size_class(1000));
  Storage again(990);  // same class as 1000
  EXPECT_EQ(again.data(), first);
  const AllocatorStats now = allocator_stats();
  EXPECT_EQ(now.hits, start.hits + 1);
  EXPECT_EQ(now.misses, start.misses + 1);
  EXPECT_EQ(now.bytes_cached, 0u);
}

TEST_F(AllocatorTest, BlocksAre64ByteAligned) {
  for (size_t n : {size_t{1}, size_t{100}, size_t{4096}, size_t{100000}}) {
    Storage s(n, "test", Init::None);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data()) % 64, 0u) << n;
  }
}

TEST_F(AllocatorTest, ZerosAfterReuseAreZero) {
  {
    Tensor t = full({64, 64}, 7.0);  // leaves a block of non-zero bytes in the cache
  }
  const uint64_t hits = allocator_stats().hits;
  Tensor z = zeros({64, 64});
  EXPECT_EQ(allocator_stats().hits, hits + 1);  // the same block, recycled
  for (double v : z.to_vector()) ASSERT_EQ(v, 0.0);
  { Tensor t = full({64, 64}, 7.0); }
  // empty() recycles the block too, without the memset: its values are
  // unspecified (zeros() is the one that promises 0).
  const uint64_t before = allocator_stats().hits;
  Tensor e = empty({64, 64});
  EXPECT_EQ(allocator_stats().hits, before + 1);
  EXPECT_EQ(e.shape(), (Shape{64, 64}));
}

TEST_F(AllocatorTest, TheCapIsRespected) {
  set_allocator_cache_limit(3000);
  {
    Storage a(1024), b(1024), c(1024);  // three 1 KiB blocks, room for two
  }
  EXPECT_EQ(allocator_stats().bytes_cached, 2048u);
  {
    Storage big(4096);  // larger than the cap: straight back to the OS
  }
  EXPECT_EQ(allocator_stats().bytes_cached, 2048u);
  set_allocator_cache_limit(1024);  // lowering the cap frees past it
  EXPECT_EQ(allocator_stats().bytes_cached, 1024u);
  set_allocator_cache_limit(0);  // 0: no caching at all
  EXPECT_EQ(allocator_stats().bytes_cached, 0u);
  const uint64_t hits = allocator_stats().hits;
  { Storage s(1024); }
  Storage s(1024);
  EXPECT_EQ(allocator_stats().hits, hits);
}

TEST_F(AllocatorTest, EmptyCacheReturnsEverything) {
  {
    std::vector<Tensor> many;
    for (int64_t n = 1; n < 2000; n += 97) many.push_back(ones({n}));
  }
  EXPECT_GT(allocator_stats().bytes_cached, 0u);
  const size_t in_use = allocator_stats().bytes_in_use;
  empty_cache();
  EXPECT_EQ(allocator_stats().bytes_cached, 0u);
  EXPECT_EQ(allocator_stats().bytes_in_use, in_use);
}

TEST_F(AllocatorTest, ConcurrentAllocationAndFree) {
  // Blocks made on one thread and freed on another, in several size classes;
  // the bytes in use come back to where they started.
  const size_t in_use = allocator_stats().bytes_in_use;
  constexpr int kThreads = 4, kRounds = 500;
  std::vector<std::vector<Tensor>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &made] {
      for (int r = 0; r < kRounds; ++r) {
        Tensor x = full({1 + (r * 7 + t) % 300}, static_cast<double>(t));
        Tensor z = zeros({1 + (r * 13 + t) % 300});
        for (double v : z.to_vector()) ASSERT_EQ(v, 0.0);
        for (double v : x.to_vector()) ASSERT_EQ(v, static_cast<double>(t));
        if (r % 5 == 0) made[static_cast<size_t>(t)].push_back(x);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  threads.clear();
  for (int t = 0; t < kThreads; ++t)  // free another thread's tensors
    threads.emplace_back([t, &made] { made[static_cast<size_t>((t + 1) % kThreads)].clear(); });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(allocator_stats().bytes_in_use, in_use);
}

TEST_F(AllocatorTest, OutOfMemoryThrowsNamingTheOp) {
  // 4 EiB: beyond any address space.
  const size_t in_use = allocator_stats().bytes_in_use;
  EXPECT_TRUE(testing::throws_error([] { Storage s(size_t{1} << 62, "my_op"); },
                                    {"my_op", "out of memory"}));
  EXPECT_EQ(allocator_stats().bytes_in_use, in_use);  // the failed request is not counted
}

}  // namespace
}  // namespace ag
