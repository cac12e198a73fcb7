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

// dot with the bidirectional encoder: each direction H/2 wide
// (encoder_hiddens), so its keys are H wide, the queries' width. Its sizes
// in the state dict, PyTorch's GRU names; saved as format 5 with
// meta.encoder_hiddens, loaded as itself. Without the option, or with it on
// the one-way encoder, make_model says why not.
TEST(TranslateScoring, DotReadsTheBidirectionalEncoderAtHalfWidth) {
  const Dataset data = make_dataset({"dates", 500, 20, 3});
  ModelConfig config;
  config.attention = "dot";
  config.encoder = "bidirectional";
  config.encoder_hiddens = 16;  // H = 32
  manual_seed(1);
  Translator translator = make_translator(config, data);
  const auto state = translator.model->state_dict();
  EXPECT_EQ(state.at("encoder.rnn.weight_hh_l0").shape(), (Shape{48, 16}));
  EXPECT_EQ(state.at("encoder.rnn.weight_ih_l1_reverse").shape(), (Shape{48, 32}));
  EXPECT_EQ(state.at("decoder.W_s.weight").shape(), (Shape{32, 16}));
  EXPECT_EQ(state.at("decoder.rnn.weight_ih_l0").shape(), (Shape{96, 32 + 32}));
  TrainOptions options;
  options.steps = 3;
  options.batch_size = 16;
  train_seq2seq(translator, data, options);
  const testing::ScratchDir dir("translate_dot_bidirectional");
  save_translator(dir / "model.npz", translator);
  const auto file = load_npz(dir / "model.npz");
  EXPECT_EQ(file.at("meta.format").to_vector(), (std::vector<double>{5}));
  EXPECT_EQ(file.at("meta.encoder_hiddens").to_vector(), (std::vector<double>{16}));
  Translator loaded = load_translator(dir / "model.npz");
  EXPECT_EQ(loaded.config.encoder_hiddens, 16);
  EXPECT_EQ(evaluate(loaded, data.heldout()).outputs, evaluate(translator, data.heldout()).outputs);
  config.encoder_hiddens = 0;
  EXPECT_TRUE(testing::throws_error([&] { make_translator(config, data); },
                                    {"DotScoring", "queries have 32", "keys 64"}));
  config.encoder = "unidirectional";
  config.encoder_hiddens = 16;
  EXPECT_TRUE(testing::throws_error([&] { make_translator(config, data); },
                                    {"Seq2SeqAttentionDecoder", "encoder_hiddens 16", "one-way"}));
}

}  // namespace
}  // namespace ag::translate
