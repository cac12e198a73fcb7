// translate/: data-parallel training (TrainOptions::threads). T shards of a
// batch on T replicas give the gradients and Adam steps of one thread on the
// whole batch, to float64 rounding, whether or not T divides the batch;
// dropout stays reproducible for a given T; T > batch is a clear error.
#include "attograd/translate/train.h"
#include "test_util.h"
#include "translate_test_util.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <random>

namespace ag::translate {
namespace {

using ag::testing::throws_error;

// What a few steps leave behind: the loss of every step, and after every
// step each parameter's (clipped) gradient and value.
struct Trajectory {
  std::vector<double> losses;
  std::vector<std::vector<Tensor>> grads, params;
};

// `kind`: "additive" or "dot" (bahdanau's attention), "bidirectional"
// (additive attention over the bidirectional encoder, whose batches are cut
// into parts by length), or "transformer".
Trajectory train_steps(const Dataset& data, const std::string& kind, double dropout, int64_t batch,
                       int64_t threads, int64_t steps) {
  ag::manual_seed(7);
  ModelConfig config;
  if (kind == "transformer") {
    config.model = kind;
    config.num_heads = 2;
    config.ffn_num_hiddens = 12;
  } else if (kind == "bidirectional") {
    config.encoder = kind;
  } else {
    config.attention = kind;
  }
  config.embed_size = 6;
  config.num_hiddens = 8;
  config.num_layers = 2;
  config.dropout = dropout;
  Translator translator = make_translator(config, data);
  translator.model->to(kFloat64);
  TrainOptions options;
  options.batch_size = batch;
  options.threads = threads;
  options.lr = 0.01;
  Seq2SeqTrainer trainer(translator, data, options);
  Trajectory t;
  for (int64_t s = 0; s < steps; ++s) {
    t.losses.push_back(trainer.step());
    std::vector<Tensor> grads, params;
    for (const Tensor& p : translator.model->parameters()) {
      grads.push_back(p.grad().clone());
      params.push_back(p.detach().clone());
    }
    t.grads.push_back(grads);
    t.params.push_back(params);
  }
  return t;
}

// float64: the shards' sums differ from one thread's only in the order of
// the additions.
void expect_same_trajectory(const Trajectory& threads, const Trajectory& one,
                            const std::string& what) {
  ASSERT_EQ(threads.losses.size(), one.losses.size());
  for (size_t s = 0; s < one.losses.size(); ++s) {
    EXPECT_NEAR(threads.losses[s], one.losses[s], 1e-12) << what << " step " << s;
    for (size_t i = 0; i < one.grads[s].size(); ++i) {
      EXPECT_LT(ag::testing::max_abs_diff(threads.grads[s][i], one.grads[s][i]), 1e-12)
          << what << " step " << s << " gradient " << i;
      EXPECT_LT(ag::testing::max_abs_diff(threads.params[s][i], one.params[s][i]), 1e-12)
          << what << " step " << s << " parameter " << i;
    }
  }
}

TEST(TranslateThreads, ShardsGiveOneThreadsGradientsAndAdamSteps) {
  const Dataset data = make_dataset({"dates", 300, 10, 3});
  for (const std::string attention : {"additive", "dot", "transformer", "bidirectional"}) {
    // 13 rows: neither 2 nor 3 divides it (shards of 6 + 7 and 4 + 4 + 5);
    // 12: 3 shards of 4. The bidirectional model's parts go by length, and
    // one thread trains two of them.
    for (const int64_t batch : {13, 12}) {
      const Trajectory one = train_steps(data, attention, 0.0, batch, 1, 3);
      for (const int64_t threads : {2, 3}) {
        const std::string what =
            attention + " batch " + std::to_string(batch) + " threads " + std::to_string(threads);
        expect_same_trajectory(train_steps(data, attention, 0.0, batch, threads, 3), one, what);
      }
    }
  }
}

TEST(TranslateThreads, DropoutIsReproducibleForAGivenThreadCount) {
  const Dataset data = make_dataset({"reverse", 300, 10, 4});
  for (const std::string kind : {"additive", "transformer"}) {
    const Trajectory a = train_steps(data, kind, 0.2, 10, 2, 2);
    const Trajectory b = train_steps(data, kind, 0.2, 10, 2, 2);
    EXPECT_EQ(a.losses, b.losses) << kind;
    for (size_t i = 0; i < a.params.back().size(); ++i)
      EXPECT_EQ(a.params.back()[i].to_vector(), b.params.back()[i].to_vector()) << kind << i;
    // The shards draw their own masks, so the steps are not one thread's.
    const Trajectory one = train_steps(data, kind, 0.2, 10, 1, 2);
    EXPECT_NE(a.losses, one.losses) << kind;
  }
}

// The largest part's rows x (longest source + longest target).
int64_t largest_work(const std::vector<std::vector<int64_t>>& parts,
                     const std::vector<int64_t>& src, const std::vector<int64_t>& tgt) {
  int64_t largest = 0;
  for (const std::vector<int64_t>& part : parts) {
    int64_t s = 0, t = 0;
    for (int64_t r : part) {
      s = std::max(s, src[static_cast<size_t>(r)]);
      t = std::max(t, tgt[static_cast<size_t>(r)]);
    }
    largest = std::max(largest, static_cast<int64_t>(part.size()) * (s + t));
  }
  return largest;
}

// largest_work's least over every way of cutting the rows, longest first,
// into `parts` runs: the plain search length_parts' dynamic programme must
// match.
int64_t least_largest_work(const std::vector<int64_t>& src, const std::vector<int64_t>& tgt,
                           int64_t parts) {
  const auto n = static_cast<int64_t>(src.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return src[static_cast<size_t>(a)] + tgt[static_cast<size_t>(a)] >
           src[static_cast<size_t>(b)] + tgt[static_cast<size_t>(b)];
  });
  int64_t best = std::numeric_limits<int64_t>::max();
  // every choice of parts - 1 cut points among the n - 1 gaps, as a bit mask
  for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
    if (std::popcount(mask) != parts - 1) continue;
    std::vector<std::vector<int64_t>> cut(1);
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0 && (mask >> (i - 1) & 1u)) cut.emplace_back();
      cut.back().push_back(order[static_cast<size_t>(i)]);
    }
    best = std::min(best, largest_work(cut, src, tgt));
  }
  return best;
}

TEST(TranslateThreads, LengthPartsPutTheLongWordsTogether) {
  // Two long words among short ones: cut in batch order, both halves would
  // run 20 steps for 3 rows (60); the long words' part runs 20 steps for 2
  // rows (40), the short words' 4 steps for 4 rows (16).
  const std::vector<int64_t> src = {10, 2, 2, 10, 2, 2}, tgt = {10, 2, 2, 10, 2, 2};
  EXPECT_EQ(length_parts(src, tgt, 2), (std::vector<std::vector<int64_t>>{{0, 3}, {1, 2, 4, 5}}));
  EXPECT_EQ(length_parts(src, tgt, 1), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3, 4, 5}}));
  // Random lengths: every row in one part, each part in batch order and not
  // empty, and the largest part's work the least any cut gives.
  std::mt19937 random(3);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + trial % 10, parts = 1 + trial % std::min<int64_t>(n, 4);
    std::vector<int64_t> s(static_cast<size_t>(n)), t(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      s[static_cast<size_t>(i)] = 1 + static_cast<int64_t>(random() % 12);
      t[static_cast<size_t>(i)] = 1 + static_cast<int64_t>(random() % 12);
    }
    const std::vector<std::vector<int64_t>> cut = length_parts(s, t, parts);
    ASSERT_EQ(static_cast<int64_t>(cut.size()), parts);
    std::vector<int64_t> seen;
    for (const std::vector<int64_t>& part : cut) {
      ASSERT_FALSE(part.empty());
      ASSERT_TRUE(std::is_sorted(part.begin(), part.end()));
      seen.insert(seen.end(), part.begin(), part.end());
    }
    std::sort(seen.begin(), seen.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], i);
    EXPECT_EQ(largest_work(cut, s, t), least_largest_work(s, t, parts)) << "trial " << trial;
  }
  EXPECT_TRUE(throws_error([&] { length_parts(src, tgt, 0); }, {"length_parts", "0 parts"}));
  EXPECT_TRUE(throws_error([&] { length_parts(src, tgt, 7); }, {"length_parts", "7 parts"}));
  EXPECT_TRUE(throws_error(
      [&] {
        length_parts(src, {1, 2}, 1);
      },
      {"length_parts", "6 source and 2 target lengths"}));
}

TEST(TranslateThreads, MoreThreadsThanRowsIsAnError) {
  const Dataset data = make_dataset({"sort", 300, 10, 1});
  ModelConfig config = one_layer_config(4);
  Translator translator = make_translator(config, data);
  TrainOptions options;
  options.batch_size = 4;
  options.threads = 5;
  EXPECT_TRUE(throws_error([&] { Seq2SeqTrainer(translator, data, options); },
                           {"train_seq2seq", "threads 5", "batch size 4"}));
  options.threads = 0;
  EXPECT_TRUE(throws_error([&] { train_seq2seq(translator, data, options); },
                           {"train_seq2seq", "threads 0"}));
  options.threads = 4;  // one row per shard works
  options.steps = 1;
  EXPECT_TRUE(std::isfinite(train_seq2seq(translator, data, options)));
}

}  // namespace
}  // namespace ag::translate
