// translate/ with every scoring function of nn's table: Bahdanau's model
// with the bidirectional encoder learns the dates with general and
// multihead attention too (>= 99% of the held-out dates exact), and a model
// of each saves and loads with its name and heads, giving the same outputs.
// attograd-translate's own default run and the PyTorch twin's agreement:
// docs/scoring.md, "Measured".
#include "attograd/translate/model.h"
#include "attograd/translate/train.h"
#include "test_util.h"

namespace ag::translate {
namespace {

// A short recipe that learns dates quickly: d2l's sizes, dropout 0, Adam at
// 0.01 down a cosine (tutorial 18 trains the same way). Under the sanitizers
// (~10x slower) a token run must at least halve the loss.
#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t kSteps = 60;
constexpr double kRequiredAccuracy = 0.0;
#else
constexpr int64_t kSteps = 900;
constexpr double kRequiredAccuracy = 0.99;
#endif

Translator train_dates(const Dataset& data, const std::string& scoring, double* first_loss,
                       double* last_loss) {
  manual_seed(42);
  ModelConfig config;
  config.attention = scoring;
  config.encoder = "bidirectional";
  config.num_heads = 4;
  config.dropout = 0.0;
  Translator translator = make_translator(config, data);
  TrainOptions options;
  options.steps = kSteps;
  options.lr = 0.01;
  options.cosine_lr = true;
  train_seq2seq(translator, data, options, [&](const StepInfo& s) {
    if (s.step == 1) *first_loss = s.loss;
    *last_loss = s.loss;
  });
  return translator;
}

TEST(TranslateScoring, GeneralAndMultiheadLearnDatesAndSaveAndLoad) {
  const Dataset data = make_dataset({"dates", 20000, 200, 3});
  for (const std::string scoring : {"general", "multihead"}) {
    SCOPED_TRACE(scoring);
    double first_loss = 0, last_loss = 0;
    Translator translator = train_dates(data, scoring, &first_loss, &last_loss);
    const Evaluation e = evaluate(translator, data.heldout());
    EXPECT_LT(last_loss, 0.5 * first_loss);
    EXPECT_GE(e.accuracy, kRequiredAccuracy) << "after " << kSteps << " steps";
    std::cout << scoring << ": held-out exact match " << e.accuracy << ", weight on the field "
              << e.figure("alignment") << "\n";
    // Saved and loaded: the name and the heads come back, and the outputs.
    const testing::ScratchDir dir("translate_scoring");
    save_translator(dir / "model.npz", translator);
    Translator loaded = load_translator(dir / "model.npz");
    EXPECT_EQ(loaded.config.attention, scoring);
    EXPECT_EQ(loaded.config.encoder, "bidirectional");
    EXPECT_EQ(loaded.config.num_heads, 4);
    EXPECT_EQ(evaluate(loaded, data.heldout()).outputs, e.outputs);
  }
}

}  // namespace
}  // namespace ag::translate
