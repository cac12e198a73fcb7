// translate/: data-parallel training (TrainOptions::threads). T shards of a
// batch on T replicas give the gradients and Adam steps of one thread on the
// whole batch, to float64 rounding, whether or not T divides the batch;
// dropout stays reproducible for a given T; T > batch is a clear error.
#include "attograd/translate/train.h"
#include "test_util.h"

namespace ag::translate {
namespace {

using ag::testing::throws_error;

// What a few steps leave behind: the loss of every step, and after every
// step each parameter's (clipped) gradient and value.
struct Trajectory {
  std::vector<double> losses;
  std::vector<std::vector<Tensor>> grads, params;
};

// `kind`: "additive" or "dot" (bahdanau's attention), or "transformer".
Trajectory train_steps(const Dataset& data, const std::string& kind, double dropout, int64_t batch,
                       int64_t threads, int64_t steps) {
  ag::manual_seed(7);
  ModelConfig config;
  if (kind == "transformer") {
    config.model = kind;
    config.num_heads = 2;
    config.ffn_num_hiddens = 12;
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
  const Dataset data({Task::Dates, 300, 10, 3});
  for (const std::string attention : {"additive", "dot", "transformer"}) {
    // 13 rows: neither 2 nor 3 divides it (shards of 7 + 6 and 5 + 4 + 4);
    // 12: 3 shards of 4.
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
  const Dataset data({Task::Reverse, 300, 10, 4});
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

TEST(TranslateThreads, MoreThreadsThanRowsIsAnError) {
  const Dataset data({Task::Sort, 300, 10, 1});
  ModelConfig config;
  config.embed_size = config.num_hiddens = 4;
  config.num_layers = 1;
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
