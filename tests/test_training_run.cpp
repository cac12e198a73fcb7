// A training run and its checkpoint (translate/training_run.h): a run
// stopped at step k and resumed from its checkpoint ends with the same bits
// as one never stopped (every entry of the two runs' final checkpoints:
// parameters, Adam's moments and step counts, learning rate, minibatch
// order, the global generator, the best dev parameters and score, the
// averaged snapshots, the curve, every loss), on one thread and on two; the
// learning-rate schedules; and the checkpoints it refuses, each naming what
// differs.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "attograd/translate/training_run.h"
#include "test_util.h"
#include "translate_test_util.h"

namespace ag::translate {
namespace {

using ag::testing::throws_error;

const Dataset& run_sample_data() {
  static const Dataset data =
      make_dataset({"g2p", 0, 0, 0, ag::testing::source_path("tests/data/cmudict-sample.dict")});
  return data;
}

// The bidirectional encoder (batches cut to their longest words, parts
// trained apart) and dropout, so that the minibatches' order and the
// generator both matter.
ModelConfig run_config(const std::string& attention = "additive") {
  ModelConfig config = one_layer_config(8);
  config.encoder = "bidirectional";
  config.attention = attention;
  config.dropout = 0.3;
  return config;
}

// 12 steps of 32 words (the sample's 263 training examples make 8 batches
// an epoch: the run starts a second one), the Transformer's schedule, the
// dev WER at steps 5, 10 and 12, the mean of the last two evaluations
// offered at the end.
RunOptions run_options(int64_t threads) {
  TrainOptions options;
  options.steps = 12;
  options.batch_size = 32;
  options.lr = 0.02;
  options.warmup_steps = 4;
  options.label_smoothing = 0.1;
  options.seed = 5;
  options.threads = threads;
  return {.train = options, .eval_every = 5, .average_last = 2};
}

// A model made as attograd-translate makes one: the generator seeded with
// the run's seed (or `init_seed`), then the initial values drawn.
Translator fresh_translator(const RunOptions& options, const ModelConfig& config,
                            std::optional<uint64_t> init_seed = std::nullopt) {
  manual_seed(init_seed.value_or(options.train.seed));
  return make_translator(config, run_sample_data());
}

// The seed of a resumed run's fresh model: other initial values than the
// run's, so that a resume that loaded no parameters could not pass for one.
constexpr uint64_t kOtherInit = 1234;

// Trains to the end (resumed from `resume_from` if given, in a model
// initialised from kOtherInit, and then taking only the steps after the
// checkpoint's) and returns the final checkpoint's entries; or, with
// stop_after = k > 0, stops after step k (and its evaluation) and writes the
// checkpoint to `stop_path`.
std::map<std::string, Tensor> run_and_checkpoint(const RunOptions& options,
                                                 const std::string& final_path,
                                                 const std::string& resume_from = "",
                                                 int64_t stop_after = 0,
                                                 const std::string& stop_path = "") {
  Translator translator = fresh_translator(
      options, run_config(), resume_from.empty() ? std::nullopt : std::optional(kOtherInit));
  TrainingRun run(translator, run_sample_data(), options);
  if (!resume_from.empty()) run.resume(resume_from);
  const int64_t first = run.steps_taken();
  if (!resume_from.empty()) {
    EXPECT_GT(first, 0) << "the resumed run starts at step 0";
  }
  int64_t taken = 0;
  while (!run.finished()) {
    run.step();
    ++taken;
    if (run.evaluation_due()) run.evaluate();
    if (run.steps_taken() == stop_after) {
      run.save_checkpoint(stop_path);
      return {};
    }
  }
  EXPECT_EQ(first + taken, options.train.steps);
  run.save_checkpoint(final_path);
  return load_npz(final_path);
}

// Equal dtype, shape and bytes: -0 and 0 differ, as do two NaNs of
// different payloads.
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  const auto start = [](const Tensor& t) -> const void* {
    switch (t.dtype()) {
      case kFloat32:
        return t.data_ptr<float>();
      case kFloat64:
        return t.data_ptr<double>();
      case kInt64:
        return t.data_ptr<int64_t>();
      default:
        return t.data_ptr<bool>();
    }
  };
  const auto bytes = static_cast<size_t>(x.numel()) * dtype_size(x.dtype());
  return std::memcmp(start(x), start(y), bytes) == 0;
}

// Every entry of `a` and `b` bit for bit, but the training seconds (a clock's).
void expect_same_checkpoints(const std::map<std::string, Tensor>& a,
                             const std::map<std::string, Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, value] : a) {
    if (name == "run.seconds") continue;
    ASSERT_TRUE(b.count(name) > 0) << name;
    EXPECT_TRUE(same_bits(value, b.at(name))) << name;
  }
}

class TrainingRunResume : public ::testing::TestWithParam<int64_t> {};

// Stopped after step 5 (just evaluated) or 7 (between evaluations), then
// resumed in a fresh model from the checkpoint, with the global generator
// moved on in between (as a new process seeds it): the same final state as
// a run never stopped.
TEST_P(TrainingRunResume, StoppedAndResumedEqualsUninterrupted) {
  const ag::testing::ScratchDir dir("training_run_resume");
  const RunOptions options = run_options(GetParam());
  const auto whole = run_and_checkpoint(options, dir / "whole.npz");
  // The comparison covers what a resumed run must get back.
  for (const char* name :
       {"decoder.dense.weight", "encoder.rnn.weight_hh_l0_reverse",
        "run.trainer.optimizer.state.0.exp_avg", "run.trainer.optimizer.state.0.exp_avg_sq",
        "run.trainer.optimizer.state.0.step", "run.trainer.optimizer.param_groups.0.lr",
        "run.trainer.batches.rng", "run.trainer.batches.order", "run.trainer.batches.position",
        "run.rng", "run.best.score", "run.best.parameters.decoder.dense.weight",
        "run.average.1.decoder.dense.weight", "run.curve.accuracy", "run.losses"})
    EXPECT_TRUE(whole.count(name) > 0) << name;
  EXPECT_EQ(whole.at("run.curve.step").to_vector(), (std::vector<double>{5, 10, 12}));
  // The comparison can fail: the same run from kOtherInit's initial values
  // ends elsewhere (a resume that loaded no parameters would be this run).
  {
    Translator other = fresh_translator(options, run_config(), kOtherInit);
    TrainingRun run(other, run_sample_data(), options);
    while (!run.finished()) {
      run.step();
      if (run.evaluation_due()) run.evaluate();
    }
    EXPECT_FALSE(same_bits(other.model->state_dict().at("decoder.dense.weight"),
                           whole.at("decoder.dense.weight")));
  }
  for (const int64_t stop : {5, 7}) {
    SCOPED_TRACE("stopped after step " + std::to_string(stop));
    run_and_checkpoint(options, "", "", stop, dir / "stopped.npz");
    manual_seed(99);  // a sitting of its own draws from its own generator
    rand({100});
    expect_same_checkpoints(whole,
                            run_and_checkpoint(options, dir / "resumed.npz", dir / "stopped.npz"));
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, TrainingRunResume, ::testing::Values(1, 2));

// The checkpoint is a generator's state, not a replay: resuming from step 7
// twice gives the same run twice, and a run resumed at step 7 without the
// saved generator (the fresh model's) drops other units out: its
// parameters differ. (This is what the test above would miss if the
// generator were not restored.)
TEST(TrainingRunCheckpoint, TheGeneratorIsPartOfTheState) {
  const ag::testing::ScratchDir dir("training_run_rng");
  const RunOptions options = run_options(1);
  run_and_checkpoint(options, "", "", 7, dir / "stopped.npz");
  auto file = load_npz(dir / "stopped.npz");
  const auto once = run_and_checkpoint(options, dir / "once.npz", dir / "stopped.npz");
  manual_seed(options.train.seed);
  file["run.rng"] = get_rng_state();  // another draw of dropout masks from here on
  save_npz(dir / "other_rng.npz", file);
  const auto other = run_and_checkpoint(options, dir / "other.npz", dir / "other_rng.npz");
  EXPECT_FALSE(same_bits(once.at("decoder.dense.weight"), other.at("decoder.dense.weight")));
}

// With the new options off, a run is train_seq2seq's steps: the
// evaluations, the kept copies and the checkpoints change no parameter.
TEST(TrainingRunCheckpoint, EvaluatingAndSavingChangeNoStep) {
  const ag::testing::ScratchDir dir("training_run_plain");
  RunOptions options = run_options(1);
  options.train.warmup_steps = 0;
  options.train.label_smoothing = 0;
  Translator plain = fresh_translator(options, run_config());
  train_seq2seq(plain, run_sample_data(), options.train);
  const auto run = run_and_checkpoint(options, dir / "run.npz", "", 0, dir / "unused.npz");
  for (const auto& [name, value] : plain.model->state_dict())
    EXPECT_TRUE(same_bits(value, run.at(name))) << name;
}

TEST(TrainingRunSchedule, WarmupThenInverseSquareRoot) {
  TrainOptions options;
  options.lr = 0.01;
  options.warmup_steps = 4;
  // lr min(s / 4, sqrt(4 / s)): up the line to the peak at step 4, then down
  const std::vector<std::pair<int64_t, double>> expected = {
      {1, 0.0025},       {2, 0.005},  {3, 0.0075}, {4, 0.01},
      {9, 0.01 * 2 / 3}, {16, 0.005}, {400, 0.001}};
  for (const auto& [step, lr] : expected)
    EXPECT_NEAR(scheduled_lr(options, step), lr, 1e-15) << step;
  EXPECT_EQ(scheduled_lr(options, 4), 0.01);  // the peak is --lr itself
  options.warmup_steps = 0;
  EXPECT_EQ(scheduled_lr(options, 7), 0.01);  // constant
  options.cosine_lr = true;
  options.steps = 10;
  EXPECT_EQ(scheduled_lr(options, 1), 0.01);
  EXPECT_NEAR(scheduled_lr(options, 6), 0.005, 1e-15);  // half way down the half cosine
  EXPECT_TRUE(throws_error([&] { scheduled_lr(options, 0); }, {"scheduled_lr", "from 1", "0"}));
  // the warm-up, then half a cosine over the 6 steps after it:
  // lr (1 + cos(pi (s - 4) / 6)) / 2
  options.warmup_steps = 4;
  const std::vector<std::pair<int64_t, double>> warm_cosine = {
      {2, 0.005}, {4, 0.01}, {5, 0.01 * (2 + std::sqrt(3.0)) / 4}, {7, 0.005}, {10, 0}};
  for (const auto& [step, lr] : warm_cosine)
    EXPECT_NEAR(scheduled_lr(options, step), lr, 1e-15) << step;
  options.steps = 4;  // no step left for the cosine
  EXPECT_TRUE(
      throws_error([&] { scheduled_lr(options, 5); }, {"cosine_lr", "steps 4", "warmup_steps 4"}));
}

// Adam trains each step at the schedule's rate (its state dict's lr after
// step s is the rate of step s), the warm-up's with or without the cosine;
// a cosine with no step after the warm-up is refused.
TEST(TrainingRunSchedule, TheTrainerStepsAtTheScheduledRate) {
  RunOptions options = run_options(1);
  for (const bool cosine : {false, true}) {
    options.train.cosine_lr = cosine;
    Translator translator = fresh_translator(options, run_config());
    Seq2SeqTrainer trainer(translator, run_sample_data(), options.train);
    for (int64_t s = 1; s <= 6; ++s) {
      trainer.step();
      EXPECT_EQ(trainer.state_dict().at("optimizer.param_groups.0.lr").item(),
                scheduled_lr(options.train, s))
          << "cosine " << cosine << ", step " << s;
    }
  }
  Translator translator = fresh_translator(options, run_config());
  options.train.steps = options.train.warmup_steps;
  EXPECT_TRUE(
      throws_error([&] { Seq2SeqTrainer refused(translator, run_sample_data(), options.train); },
                   {"train_seq2seq", "warmup_steps 4", "steps 4", "cosine_lr"}));
}

// patience 1: a model that learns nothing (lr 1e-9: every dev word wrong at
// every evaluation) has its best at the first evaluation and stops at the
// second, which does not beat it.
TEST(TrainingRunPatience, StopsWhenTheDevWerStopsImproving) {
  RunOptions options = run_options(1);
  options.train.lr = 1e-9;
  options.train.steps = 100;
  options.eval_every = 2;
  options.patience = 1;
  Translator translator = fresh_translator(options, run_config());
  TrainingRun run(translator, run_sample_data(), options);
  while (!run.finished()) {
    run.step();
    if (run.evaluation_due()) run.evaluate();
  }
  EXPECT_EQ(run.steps_taken(), 4);
  ASSERT_EQ(run.curve().size(), 2u);
  EXPECT_EQ(run.curve()[0].accuracy, 0.0);
  const TrainingRun::End end = run.finish();
  EXPECT_EQ(end.best_step, 2);
  EXPECT_EQ(end.best_score, 1.0);
  EXPECT_EQ(end.averaged, 0);  // the mean of two equal snapshots is no better
}

TEST(TrainingRunProtocol, AnEvaluationDueComesFirst) {
  const ag::testing::ScratchDir dir("training_run_protocol");
  RunOptions options = run_options(1);
  options.eval_every = 1;
  Translator translator = fresh_translator(options, run_config());
  TrainingRun run(translator, run_sample_data(), options);
  run.step();
  ASSERT_TRUE(run.evaluation_due());
  EXPECT_TRUE(throws_error([&] { run.step(); }, {"TrainingRun.step", "evaluated first"}));
  EXPECT_TRUE(throws_error([&] { run.save_checkpoint(dir / "c.npz"); },
                           {"TrainingRun.save_checkpoint", "step 1", "evaluated first"}));
  run.evaluate();
  EXPECT_TRUE(throws_error([&] { run.evaluate(); }, {"TrainingRun.evaluate", "no evaluation"}));
  EXPECT_TRUE(throws_error([&] { run.finish(); }, {"TrainingRun.finish", "not finished"}));
  run.save_checkpoint(dir / "c.npz");
  EXPECT_FALSE(std::filesystem::exists(dir / "c.npz.partial"));
  EXPECT_TRUE(throws_error([&] { run.resume(dir / "c.npz"); }, {"before its first step"}));
  options.patience = 1;
  const Dataset dates = make_dataset({"dates", 100, 10, 0});
  manual_seed(0);
  Translator dated = make_translator(run_config(), dates);
  EXPECT_TRUE(throws_error([&] { TrainingRun refused(dated, dates, options); },
                           {"TrainingRun", "patience", "dev split", "dates"}));
}

// The checkpoints a run refuses, each error naming the file and what differs.
TEST(TrainingRunCheckpoint, RefusesAnotherRunsCheckpoint) {
  const ag::testing::ScratchDir dir("training_run_refuse");
  const RunOptions options = run_options(1);
  const std::string path = dir / "stopped.npz";
  run_and_checkpoint(options, "", "", 3, path);
  const auto refused = [&](const RunOptions& o, const ModelConfig& config, const std::string& file,
                           const std::vector<std::string>& fragments) {
    Translator translator = fresh_translator(o, config);
    TrainingRun run(translator, run_sample_data(), o);
    std::vector<std::string> expected{"TrainingRun.resume", file};
    expected.insert(expected.end(), fragments.begin(), fragments.end());
    return throws_error([&] { run.resume(file); }, expected);
  };
  // Another model: the scoring function, the sizes.
  EXPECT_TRUE(refused(options, run_config("general"), path,
                      {"another model", "meta.attention", "'additive' in the checkpoint",
                       "'general' in this run"}));
  ModelConfig wider = run_config();
  wider.num_hiddens = 16;
  EXPECT_TRUE(refused(options, wider, path, {"another model", "meta.sizes"}));
  // Other options: the learning rate, the threads, the schedule.
  RunOptions other = options;
  other.train.lr = 0.03;
  EXPECT_TRUE(refused(other, run_config(), path,
                      {"another run's options", "lr is 0.02 in the checkpoint, 0.03 in this run"}));
  other = options;
  other.train.threads = 2;
  EXPECT_TRUE(refused(other, run_config(), path, {"threads is 1 in the checkpoint, 2"}));
  other = options;
  other.train.warmup_steps = 8;
  EXPECT_TRUE(refused(other, run_config(), path, {"warmup_steps is 4"}));
  // Not a checkpoint: a model file, a missing file, a damaged one.
  Translator translator = fresh_translator(options, run_config());
  save_translator(dir / "model.npz", translator);
  EXPECT_TRUE(refused(options, run_config(), dir / "model.npz", {"not a checkpoint"}));
  EXPECT_TRUE(refused(options, run_config(), dir / "missing.npz", {"cannot read the checkpoint"}));
  const std::string bytes = ag::testing::read_file(path);
  std::ofstream(dir / "cut.npz", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_TRUE(refused(options, run_config(), dir / "cut.npz", {"cannot read the checkpoint"}));
  // A damaged entry: an order that is no order of the training examples.
  auto file = load_npz(path);
  file["run.trainer.batches.order"] = zeros({263}, kInt64);
  save_npz(dir / "order.npz", file);
  EXPECT_TRUE(refused(options, run_config(), dir / "order.npz",
                      {"BatchIterator.load_state", "'order'", "263 training examples"}));
}

// Another task: a dates checkpoint offered to a g2p run.
TEST(TrainingRunCheckpoint, RefusesAnotherTasksCheckpoint) {
  const ag::testing::ScratchDir dir("training_run_task");
  const Dataset dates = make_dataset({"dates", 100, 10, 0});
  RunOptions options = run_options(1);
  options.average_last = 0;
  manual_seed(0);
  Translator dated = make_translator(run_config(), dates);
  TrainingRun run(dated, dates, options);
  run.step();
  run.save_checkpoint(dir / "dates.npz");
  Translator g2p = fresh_translator(options, run_config());
  TrainingRun g2p_run(g2p, run_sample_data(), options);
  EXPECT_TRUE(throws_error(
      [&] { g2p_run.resume(dir / "dates.npz"); },
      {"TrainingRun.resume", "dates.npz", "another model, task or vocabulary", "meta."}));
}

}  // namespace
}  // namespace ag::translate
