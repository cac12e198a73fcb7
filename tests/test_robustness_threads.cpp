// Threads (issue 29): hostile thread counts, and products and backward passes
// run from several std::threads at once, which must give the numbers one
// thread gives, bit for bit (each call's arithmetic does not depend on who
// else is running); state dicts saved and loaded from several threads at
// once. ThreadsTest: run under ThreadSanitizer too.
#include <atomic>
#include <climits>
#include <thread>

#include "test_util.h"

namespace ag {
namespace {

using testing::throws_error;

TEST(RobustnessThreadsTest, HostileThreadCountsChangeNothing) {
  const int previous = get_num_threads();
  for (const int bad : {0, -1, -4, INT_MIN})
    EXPECT_TRUE(throws_error([&] { set_num_threads(bad); },
                             {"set_num_threads", "at least 1", std::to_string(bad)}))
        << bad;
  for (const int bad : {kMaxThreads + 1, INT_MAX})
    EXPECT_TRUE(throws_error([&] { set_num_threads(bad); }, {"set_num_threads", "at most"})) << bad;
  EXPECT_EQ(get_num_threads(), previous);
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  set_num_threads(previous);
  EXPECT_EQ(get_num_threads(), previous);
}

// The inputs of one round: every product attograd has, forward and backward.
struct Inputs {
  Tensor a, b;     // matmul [37, 45] @ [45, 29]
  Tensor x, y;     // bmm [3, 21, 33] @ [3, 33, 17]
  Tensor q, k, v;  // flash attention [2, 2, 19, 8], [2, 2, 27, 8], [2, 2, 27, 6]
  Tensor lengths;  // [2, 2, 19]
};

Inputs make_inputs(DType dtype) {
  manual_seed(2929);
  const auto leaf = [dtype](const Shape& shape) { return randn(shape, dtype).requires_grad_(); };
  Inputs in{leaf({37, 45}),      leaf({45, 29}),      leaf({3, 21, 33}),   leaf({3, 33, 17}),
            leaf({2, 2, 19, 8}), leaf({2, 2, 27, 8}), leaf({2, 2, 27, 6}), Tensor()};
  in.lengths = full({2, 2, 19}, 20, kInt64);
  return in;
}

// Fresh leaves with the same values, so that threads never share a grad().
Inputs copy_of(const Inputs& in) {
  const auto fresh = [](const Tensor& t) { return t.detach().clone().requires_grad_(); };
  return {fresh(in.a), fresh(in.b), fresh(in.x), fresh(in.y),
          fresh(in.q), fresh(in.k), fresh(in.v), in.lengths};
}

// Every output and every gradient of one round, flattened.
std::vector<double> round_of(const Inputs& in) {
  const Tensor mm = matmul(in.a, in.b);
  const Tensor bm = bmm(in.x, in.y);
  AttentionMasks masks;
  masks.lengths = in.lengths;
  masks.causal = true;
  const Tensor fa = flash_attention(in.q, in.k, in.v, 0.35, masks);
  // Weighted sums, so that every output element gets its own gradient.
  (sum(mm * mm) + sum(tanh(bm)) + sum(fa * fa * fa)).backward();
  std::vector<double> all;
  for (const Tensor& t : {mm, bm, fa, in.a.grad(), in.b.grad(), in.x.grad(), in.y.grad(),
                          in.q.grad(), in.k.grad(), in.v.grad()}) {
    const std::vector<double> values = t.to_vector();
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

TEST(ThreadsTest, ProductsAndBackwardsOnFourThreadsMatchOneThread) {
  for (const DType dtype : {kFloat32, kFloat64}) {
    const Inputs inputs = make_inputs(dtype);
    const std::vector<double> serial = round_of(copy_of(inputs));
    constexpr int kThreads = 4, kRounds = 3;
    std::vector<std::vector<std::vector<double>>> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < kRounds; ++r) results[t].push_back(round_of(copy_of(inputs)));
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t)
      for (int r = 0; r < kRounds; ++r)
        EXPECT_TRUE(results[t][r] == serial)
            << dtype_name(dtype) << " thread " << t << " round " << r;
  }
}

TEST(ThreadsTest, ChangingTheThreadCountWhileOthersComputeIsSafe) {
  // One thread flips the pool's size while two others compute: the results
  // are the serial ones (the pool's size changes how rows are split, never
  // what a row computes).
  const int previous = get_num_threads();
  const Inputs inputs = make_inputs(kFloat32);
  const std::vector<double> serial = round_of(copy_of(inputs));
  std::atomic<bool> done{false};
  std::thread flipper([&] {
    for (int n = 0; !done; ++n) set_num_threads(1 + n % 3);
  });
  std::vector<std::vector<double>> results(2);
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t)
    workers.emplace_back([&, t] {
      for (int r = 0; r < 3; ++r) {
        const std::vector<double> got = round_of(copy_of(inputs));
        if (got != serial) results[t] = got;  // keep a mismatch for the report
      }
    });
  for (std::thread& worker : workers) worker.join();
  done = true;
  flipper.join();
  for (int t = 0; t < 2; ++t) EXPECT_TRUE(results[t].empty()) << "worker " << t;
  set_num_threads(previous);
}

TEST(ThreadsTest, StateDictsSavedAndLoadedFromSeveralThreadsAtOnce) {
  // Each thread has its own model, saves its state dict to its own file,
  // loads the shared file and its own back into a fresh model, several times
  // while the others do the same: every load gives what was saved.
  ag::testing::ScratchDir dir("threads_io");
  manual_seed(36);
  const nn::MultiHeadAttention shared_model(16, 16, 16, 16, 4, 0.0, /*bias=*/true);
  save_npz(dir / "shared.npz", shared_model.state_dict());
  constexpr int kThreads = 4, kRounds = 5;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ThreadGenerator generator(100 + t);  // each model's own initial weights
      nn::MultiHeadAttention mine(16, 16, 16, 16, 4, 0.0, true),
          loaded(16, 16, 16, 16, 4, 0.0, true);
      const std::string path = dir / ("model_" + std::to_string(t) + ".npz");
      const auto same = [](const nn::Module& a, const nn::Module& b) {
        const auto pa = a.named_parameters(), pb = b.named_parameters();
        for (size_t i = 0; i < pa.size(); ++i)
          if (pa[i].second.to_vector() != pb[i].second.to_vector()) return false;
        return true;
      };
      for (int r = 0; r < kRounds; ++r) {
        save_npz(path, mine.state_dict());
        loaded.load_state_dict(load_npz(dir / "shared.npz"));
        if (!same(loaded, shared_model)) failures[t] = "shared.npz, round " + std::to_string(r);
        loaded.load_state_dict(load_npz(path));
        if (!same(loaded, mine)) failures[t] = path + ", round " + std::to_string(r);
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

// What one thread draws: a dropout mask (one random_u64), randn and rand.
std::vector<double> draws_of_one_thread() {
  std::vector<double> all = dropout(ones({64}, kFloat64), 0.5, true).to_vector();
  for (const Tensor& t : {randn({7}, kFloat64), rand({5}, kFloat64)}) {
    const std::vector<double> values = t.to_vector();
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

TEST(ThreadsTest, ThreadGeneratorsAreReproducibleAndLeaveTheGlobalOneAlone) {
  // Serially: what seeds 11 and 12 give, and what the global generator gives
  // after manual_seed(5).
  std::vector<double> expected[2];
  for (int t = 0; t < 2; ++t) {
    ThreadGenerator generator(11 + t);
    expected[t] = draws_of_one_thread();
  }
  manual_seed(5);
  const std::vector<double> global = draws_of_one_thread();
  EXPECT_NE(expected[0], expected[1]);

  // Two threads with their own generators draw while this one draws from the
  // global generator: every thread gets what it got alone.
  manual_seed(5);
  constexpr int kRounds = 20;
  std::vector<std::vector<double>> got[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        ThreadGenerator generator(11 + t);
        got[t].push_back(draws_of_one_thread());
      }
    });
  const std::vector<double> global_meanwhile = draws_of_one_thread();
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(global_meanwhile, global);
  for (int t = 0; t < 2; ++t)
    for (int r = 0; r < kRounds; ++r) EXPECT_EQ(got[t][r], expected[t]) << t << " " << r;

  // Nested: the inner one wins, and the outer one continues where it was.
  ThreadGenerator outer(11);
  const uint64_t first = random_u64();
  {
    ThreadGenerator inner(12);
    ThreadGenerator again(12);
    EXPECT_EQ(random_u64(), [] {
      ThreadGenerator fresh(12);
      return random_u64();
    }());
  }
  const uint64_t second = random_u64();
  ThreadGenerator reference(11);
  EXPECT_EQ(random_u64(), first);
  EXPECT_EQ(random_u64(), second);
}

}  // namespace
}  // namespace ag
