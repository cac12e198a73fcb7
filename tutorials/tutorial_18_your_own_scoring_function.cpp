// Tutorial 18 — Your own scoring function.
//
// Attention is softmax(a(q, k)) v, and the scoring function a is the one
// thing that varies (d2l, "Attention Scoring Functions"). attograd keeps each
// scoring function in a small class and lists them in one table
// (nn/scoring.h). This tutorial writes a new one in this file, and only here:
// cosine similarity with a learned temperature,
//
//   a(q, k) = exp(t) * cos(W_q q, k) = exp(t) * (W_q q) . k / (|W_q q| |k|)
//
// checks its gradients, registers it under a name, trains Bahdanau's model
// with it on dates beside additive attention and on a few minutes' worth of
// CMUdict (--long), and draws what it aligns. No library file is edited: the
// steps are those of docs/scoring.md.
//
// Legend: B batch, Tq queries, Tk keys, q query width, k key width.
//
// Run: build/tutorial_18_your_own_scoring_function [--no-pause] [--out DIR] [--long]
//      build/tutorial_18_your_own_scoring_function --viewer [viewer options]
// --viewer registers cosine and opens the viewer (ag::viewer::run_viewer)
// with it beside additive in the compare, training and translate scenes; the other
// arguments go to the viewer (e.g. --frames 5 --screenshot cosine.png).
#include <attograd/translate/report.h>
#include <attograd/translate/train.h>
#ifdef ATTOGRAD_TUTORIAL_VIEWER
#include <attograd/viewer.h>
#endif

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tutorial.h"

namespace {

namespace tr = ag::translate;

// ---- the scoring function -----------------------------------------------------------------
// A subclass of nn::ScoringFunction supplies score() and its parameters; it
// may compute the part of the keys that does not depend on the query once
// per source (remember_keys). The base class does the rest: the masked
// softmax over the scores, the pooling of the values, the weights kept for
// drawing.
class CosineScoring : public ag::nn::ScoringFunction {
 public:
  explicit CosineScoring(const ag::nn::ScoringSizes& sizes)
      : ScoringFunction("CosineScoring", sizes),
        W_q(sizes.query_size, sizes.key_size, /*bias=*/false),
        // t = log 5: the scores start in [-5, 5], the softmax neither flat
        // nor saturated; training moves it.
        log_temperature(ag::full({1}, std::log(5.0))) {
    register_module("W_q", &W_q);
    register_parameter("log_temperature", &log_temperature);
  }

 protected:
  // Once per source: the keys scaled to unit length, k / |k|: [B, Tk, k].
  ag::Tensor remember_keys(const ag::Tensor& keys) const override { return unit(keys); }

  // scores = exp(t) * unit(W_q q) . unit(k): [B, Tq, k] @ [B, k, Tk] -> [B, Tq, Tk]
  ag::Tensor score(const ag::Tensor& queries, const ag::Tensor& keys) override {
    const ag::Tensor q = unit(W_q(queries));  // [B, Tq, q] -> [B, Tq, k]
    return ag::bmm(q, ag::transpose(keys, 1, 2)) * ag::exp(log_temperature);
  }

 private:
  // x / |x| along the features, |x| floored by a tiny epsilon (a zero key).
  static ag::Tensor unit(const ag::Tensor& x) {
    return x / ag::sqrt(ag::sum(x * x, -1, /*keepdim=*/true) + 1e-12);
  }

 public:
  ag::nn::Linear W_q;          // weight [k, q]
  ag::Tensor log_temperature;  // [1]
};

// ---- sizes of the runs ----------------------------------------------------------------------
// Under the sanitizers (~10x slower) the runs are token ones: the checks of
// what training reaches run in the Release build.
#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t kDateSteps = 20, kWordSteps = 10;
constexpr bool kTrainedChecks = false;
#else
constexpr int64_t kDateSteps = 900, kWordSteps = 1000;
constexpr bool kTrainedChecks = true;
#endif
constexpr int64_t kLongWordSteps = 10000;  // --long

// Bahdanau's model with the bidirectional encoder, d2l's sizes, no dropout
// (a short run learns faster without it), trained with `scoring` for `steps`.
tr::Translator train(const tr::Dataset& data, const std::string& scoring, int64_t steps,
                     int64_t hidden = 32) {
  ag::manual_seed(18);
  tr::ModelConfig config;
  config.attention = scoring;
  config.encoder = "bidirectional";
  config.num_hiddens = hidden;
  config.dropout = 0.0;
  tr::Translator translator = tr::make_translator(config, data);
  tr::TrainOptions options;
  options.steps = steps;
  options.lr = 0.01;
  options.cosine_lr = true;
  tr::train_seq2seq(translator, data, options, [](const tr::StepInfo& info) {
    if (info.step == info.steps)
      std::cout << "  " << info.steps << " steps, loss per token " << tut::num(info.loss, "%.4f")
                << ", " << tut::num(info.seconds, "%.1f") << " s" << std::endl;
  });
  return translator;
}

// Adds CosineScoring to nn's table under the name "cosine".
// The cosine score and its context by loops over plain numbers: u = W_q q,
// then scaled dot-product attention (tutorial.h's loops) of the unit vectors
// u / |u| and k / |k| with scale exp(t), the keys also the values:
// exp(t) (u . k_j) / (|u| |k_j|), softmax over the valid keys, sum_j w_j k_j.
tut::LoopAttention cosine_by_loops(const ag::Tensor& queries, const ag::Tensor& keys,
                                   const ag::Tensor& W_q, double log_temperature,
                                   const std::vector<int64_t>& valid) {
  const auto unit_rows = [](const ag::Tensor& x) {  // each row of the last dim over its length
    std::vector<double> v = x.to_vector();
    const size_t width = static_cast<size_t>(x.size(-1));
    for (size_t row = 0; row < v.size(); row += width) {
      double length = 0;
      for (size_t i = row; i < row + width; ++i) length += v[i] * v[i];
      for (size_t i = row; i < row + width; ++i) v[i] /= std::sqrt(length);
    }
    return ag::tensor(v, x.shape(), x.dtype());
  };
  return tut::attention_by_loops(unit_rows(tut::linear_by_loops(queries, W_q)), unit_rows(keys),
                                 keys, std::exp(log_temperature), valid);
}

void register_cosine() {
  ag::nn::register_scoring_function(
      {"cosine", "exp(t) cos(W_q q, k), t learned (tutorial 18)",
       [](const ag::nn::ScoringSizes& s) { return std::make_unique<CosineScoring>(s); }});
}

// --viewer: cosine registered, then the viewer with cosine beside additive
// in the compare, training (its retrieval task) and translate scenes;
// `viewer_args` go to the viewer after those settings. Returns its exit code.
int open_viewer(const char* program, const std::vector<std::string>& viewer_args) {
#ifdef ATTOGRAD_TUTORIAL_VIEWER
  (void)program;  // the viewer names itself; only the message below needs it
  register_cosine();
  std::vector<std::string> args = {"--set", "compare.scoring=additive,cosine",
                                   "--set", "training.scoring=additive,cosine",
                                   "--set", "translate.scoring=additive,cosine"};
  args.insert(args.end(), viewer_args.begin(), viewer_args.end());
  return ag::viewer::run_viewer(args);
#else
  (void)viewer_args;
  std::cerr << program << ": built without the viewer (ATTOGRAD_BUILD_VIEWER=OFF)\n";
  return 2;
#endif
}

// --viewer anywhere in argv: true, and every other argument is the viewer's
// (viewer_args).
bool take_viewer_flag(int argc, char** argv, std::vector<std::string>& viewer_args) {
  bool found = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--viewer") {
      found = true;
    } else {
      viewer_args.emplace_back(argv[i]);
    }
  }
  return found;
}

// --long, taken out of argv.
bool take_long_flag(int& argc, char** argv) {
  bool found = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--long") {
      found = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> viewer_args;
  if (take_viewer_flag(argc, argv, viewer_args)) return open_viewer(argv[0], viewer_args);
  const bool long_run = take_long_flag(argc, argv);
  tut::Tutorial t(argc, argv, 18, "Your own scoring function");
  ag::set_num_threads(1);  // the same numbers on every machine, and the minute's budget

  t.step("The one thing that varies",
         "Every attention in d2l's chapter pools the values with softmax(a(q, k)), masked to "
         "each source's length; only the scoring function a changes. attograd lists its "
         "scoring functions in one table (nn/src/scoring_table.cpp): a name, one line, a "
         "factory. The seq2seq decoder and attograd-translate --attention NAME read it.");
  for (const ag::nn::ScoringEntry& entry : ag::nn::scoring_functions())
    std::cout << "  " << entry.name << ": " << entry.summary << "\n";

  t.step("A new one: cosine similarity with a learned temperature",
         "CosineScoring (this file) scores a(q, k) = exp(t) (W_q q) . k / (|W_q q| |k|). W_q "
         "maps the query's q features to the key's k (the bidirectional encoder's keys are "
         "twice the decoder's width), the cosine ignores lengths, and exp(t) sets how sharp "
         "the softmax may get. The keys' unit vectors do not depend on the query: "
         "remember_keys computes them once per source, not once per decoder step.");
  ag::manual_seed(1);
  const ag::nn::ScoringSizes sizes{.query_size = 3, .key_size = 4};
  CosineScoring cosine(sizes);
  cosine.to(ag::kFloat64);
  const ag::Tensor q = ag::uniform({2, 1, 3}, -1, 1, ag::kFloat64);
  const ag::Tensor k = ag::uniform({2, 5, 4}, -1, 1, ag::kFloat64);
  const ag::Tensor lens = ag::tensor({5, 3}, {2}, ag::kInt64);
  const ag::Tensor context = cosine.attend(q, cosine.remember(k, k), lens);
  t.show("weights of 2 queries over 5 keys (the second has 3 valid)", cosine.attention_weights());
  // By hand, in loops over the plain numbers (no library op, so a check the
  // library could pass only by being right): exp(t) cos(W_q q, k_j), softmax
  // over the valid keys, then the context sum_j w_j v_j (here v = k).
  const tut::LoopAttention by_hand =
      cosine_by_loops(q, k, cosine.W_q.weight, cosine.log_temperature.item(), {5, 3});
  t.check("its weights are softmax(exp(t) cos(W_q q, k)) over the valid keys, by loops",
          tut::max_abs_diff(cosine.attention_weights(), by_hand.weights) < 1e-10,
          tut::num(tut::max_abs_diff(cosine.attention_weights(), by_hand.weights), "%.1e"));
  t.check("its context [2, 1, 4] is those weights times the values, by loops",
          tut::max_abs_diff(context, by_hand.output) < 1e-10,
          tut::num(tut::max_abs_diff(context, by_hand.output), "%.1e"));

  t.step("Its gradients, checked numerically",
         "gradcheck (tutorial 1) compares autograd's gradient of the context with finite "
         "differences, in float64, through the queries, the keys, the values, W_q and t. "
         "gradcheck_in_place perturbs each tensor where it is, so attend() reads the "
         "module's own W_q and t (gradcheck would give a function copies of them, which "
         "the module never reads: it says so, rather than passing).");
  {
    const ag::Tensor queries = q.detach().requires_grad_(), keys = k.detach().requires_grad_();
    const ag::Tensor values = ag::uniform({2, 5, 4}, -1, 1, ag::kFloat64).requires_grad_();
    std::vector<ag::Tensor> checked{queries, keys, values};
    for (const ag::Tensor& parameter : cosine.parameters()) checked.push_back(parameter);
    const ag::GradcheckResult result = ag::gradcheck_in_place(
        [&] { return cosine.attend(queries, cosine.remember(keys, values), lens); }, checked);
    t.check("gradcheck passes for q, k, v, W_q and t", result.ok, result.message);
  }

  t.step("Registering it",
         "register_scoring_function adds a name and a factory to the table at run time. From "
         "then on the library builds it by name like its own: make_bahdanau_seq2seq(..., "
         "\"cosine\"), or a translate ModelConfig whose attention is \"cosine\".");
  register_cosine();
  std::cout << "  the table now: " << ag::nn::scoring_function_names() << "\n";
  {
    // Built by name from the table, with this module's parameters, it is this class.
    const ag::nn::ScoringEntry* entry = ag::nn::find_scoring_function("cosine");
    double difference = 1.0;
    if (entry != nullptr) {
      std::unique_ptr<ag::nn::ScoringFunction> built = entry->make(sizes);
      built->to(ag::kFloat64);
      built->load_state_dict(cosine.state_dict());
      built->attend(q, built->remember(k, k), lens);
      difference = tut::max_abs_diff(built->attention_weights(), cosine.attention_weights());
    }
    t.check("the table builds cosine by name, and it gives this class's weights",
            entry != nullptr && difference == 0.0);
  }

  t.step("Dates, beside additive attention",
         "Bahdanau's model with the bidirectional encoder (d2l's sizes, dropout 0), trained " +
             std::to_string(kDateSteps) +
             " steps (Adam, lr 0.01 down a cosine) with each scoring function on the same "
             "dates; then the 200 held-out dates, which training never saw.");
  tr::DatasetOptions date_options;
  date_options.num_train = 20000;
  date_options.num_heldout = 200;
  const tr::Dataset dates = tr::make_dataset(date_options);
  std::cout << "cosine:\n";
  tr::Translator cosine_dates = train(dates, "cosine", kDateSteps);
  std::cout << "additive:\n";
  tr::Translator additive_dates = train(dates, "additive", kDateSteps);
  const tr::Evaluation cosine_eval = tr::evaluate(cosine_dates, dates.heldout());
  const tr::Evaluation additive_eval = tr::evaluate(additive_dates, dates.heldout());
  std::cout << "  held out          cosine   additive\n  exact match     "
            << tut::num(100 * cosine_eval.accuracy, "%7.1f") << "%"
            << tut::num(100 * additive_eval.accuracy, "%9.1f") << "%\n  weight on field "
            << tut::num(cosine_eval.figure("alignment"), "%8.2f")
            << tut::num(additive_eval.figure("alignment"), "%10.2f") << "\n";
  const std::string date = dates.heldout()[0].source;
  const tr::Translation cosine_date = tr::translate(cosine_dates, {date})[0];
  const tr::Translation additive_date = tr::translate(additive_dates, {date})[0];
  std::cout << "\ncosine, \"" << date << "\":\n" << tr::alignment_table(cosine_date);
  t.alignment("cosine_date", cosine_date, "cosine", "Source characters", "Output characters");
  t.alignment("additive_date", additive_date, "additive", "Source characters", "Output characters");
  if (kTrainedChecks) {
    t.check("cosine learns the dates: at least 99% of the held-out dates exact",
            cosine_eval.accuracy >= 0.99, tut::num(100 * cosine_eval.accuracy, "%.1f") + "%");
    t.check("its digits look at their field: over 0.5 of their weight",
            cosine_eval.figure("alignment") > 0.5,
            tut::num(cosine_eval.figure("alignment"), "%.2f"));
  }

  const int64_t word_steps = long_run ? kLongWordSteps : kWordSteps;
  t.step("Letters to sounds, briefly",
         "The same model on CMUdict's words of up to 8 letters (hidden 64), " +
             std::to_string(word_steps) + " steps" +
             (long_run ? "" : " (--long: " + std::to_string(kLongWordSteps) + ")") +
             ", and one word's alignment beside the shipped additive model's "
             "(translate/models/g2p-cmudict.npz, trained for 41 minutes).");
  tr::DatasetOptions word_options;
  word_options.task = "g2p";
  word_options.max_length = 8;
  const tr::Dataset words = tr::make_dataset(word_options);
  tr::Translator cosine_words = train(words, "cosine", word_steps, 64);
  std::vector<tr::Example> dev(words.dev().begin(),
                               words.dev().begin() + std::min<size_t>(words.dev().size(), 500));
  const tr::Evaluation word_eval = tr::evaluate(cosine_words, dev);
  std::cout << "  " << dev.size() << " dev words: WER "
            << tut::num(100 * word_eval.figure("wer"), "%.1f") << "%, PER "
            << tut::num(100 * word_eval.figure("per"), "%.1f") << "%\n";
  tr::Translator shipped = tr::load_translator(
      (std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "translate/models/g2p-cmudict.npz").string());
  const tr::Translation cosine_word = tr::translate(cosine_words, {"thought"})[0];
  const tr::Translation additive_word = tr::translate(shipped, {"thought"})[0];
  std::cout << "thought: cosine says " << cosine_word.output << ", the shipped additive model "
            << additive_word.output << "\n"
            << tr::alignment_table(cosine_word);
  t.alignment("cosine_thought", cosine_word, "cosine, " + std::to_string(word_steps) + " steps",
              "Letters", "Phonemes");
  t.alignment("additive_thought", additive_word, "additive (shipped)", "Letters", "Phonemes");
  if (kTrainedChecks) {
    t.check("it learns the sounds: PER on dev words under 25%", word_eval.figure("per") < 0.25,
            tut::num(100 * word_eval.figure("per"), "%.1f") + "%");
  }
  t.say(
      "To add a scoring function to the library itself, the class goes in "
      "nn/src/scoring_NAME.cpp and one line in nn/src/scoring_table.cpp (docs/scoring.md). "
      "attograd-translate --attention NAME then trains with it.");
  return t.finish();
}
