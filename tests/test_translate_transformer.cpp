// translate/ with the Transformer (issue 23): make_model("transformer") and
// its sizes, saving and loading (meta.transformer, the look-ahead flag,
// version 1 files still read), the attention weights off in training and on
// at prediction; the per-block, per-head maps (transformer_maps, JSON,
// heatmaps); a short training run that must learn.
#include <cmath>
#include <ctime>
#include <filesystem>
#include <numbers>

#include "attograd/nn/transformer.h"
#include "attograd/translate/report.h"
#include "attograd/translate/train.h"
#include "test_util.h"
#include "translate_test_util.h"

namespace ag::translate {
namespace {

using ag::testing::throws_error;

ModelConfig small_transformer() {
  ModelConfig config;
  config.model = "transformer";
  config.num_hiddens = 16;
  config.ffn_num_hiddens = 24;
  config.num_heads = 2;
  config.num_blks = 1;
  config.dropout = 0;
  return config;
}

nn::Transformer& as_transformer(Translator& t) {
  auto* model = dynamic_cast<nn::Transformer*>(t.model.get());
  EXPECT_NE(model, nullptr);
  return *model;
}

TEST(TranslateTransformer, MakeModelBuildsD2lsTransformer) {
  ModelConfig config;
  config.model = "transformer";
  auto model = make_model(config, 14, 13);  // the defaults: d 32, FFN 64, 4 heads, 2 blocks
  auto* transformer = dynamic_cast<nn::Transformer*>(model.get());
  ASSERT_NE(transformer, nullptr);
  EXPECT_TRUE(transformer->transformer_decoder().causal);
  const auto state = model->state_dict();
  EXPECT_EQ(state.size(), 64u);  // docs/transformer.md: 64 tensors for 2 blocks
  EXPECT_EQ(state.at("encoder.blks.block1.attention.W_q.weight").shape(), (Shape{32, 32}));
  EXPECT_EQ(state.at("encoder.blks.block0.ffn.dense1.weight").shape(), (Shape{64, 32}));
  EXPECT_EQ(state.at("decoder.dense.weight").shape(), (Shape{13, 32}));
  EXPECT_EQ(transformer->transformer_decoder().blks[0].attention1.num_heads, 4);

  config.causal = false;
  auto unmasked = make_model(config, 14, 13);
  EXPECT_FALSE(dynamic_cast<nn::Transformer&>(*unmasked).transformer_decoder().causal);

  ModelConfig bad = small_transformer();
  bad.num_heads = 3;  // does not divide 16
  EXPECT_TRUE(throws_error([&] { make_model(bad, 10, 10); },
                           {"make_model", "Transformer sizes", "heads 3", "hidden 16"}));
  bad = small_transformer();
  bad.num_hiddens = 15;  // odd: no sin/cos pairs
  bad.num_heads = 1;
  EXPECT_TRUE(throws_error([&] { make_model(bad, 10, 10); }, {"make_model", "hidden 15"}));
  bad = small_transformer();
  bad.num_blks = 0;
  EXPECT_TRUE(throws_error([&] { make_model(bad, 10, 10); }, {"make_model", "blocks 0"}));
}

// `config`'s model for `data`, trained 3 steps of 16 examples.
Translator trained_briefly(const ModelConfig& config, const Dataset& data) {
  Translator translator = make_translator(config, data);
  TrainOptions options;
  options.steps = 3;
  options.batch_size = 16;
  train_seq2seq(translator, data, options);
  return translator;
}

TEST(TranslateTransformer, SaveLoadKeepsSizesMaskAndPredictions) {
  const Dataset data = make_dataset({"reverse", 500, 30, 2});
  ag::manual_seed(3);
  ModelConfig config = small_transformer();
  config.causal = false;
  Translator translator = trained_briefly(config, data);
  const std::string path = ag::testing::scratch_file("translate_transformer", "transformer.npz");
  save_translator(path, translator);
  Translator loaded = load_translator(path);
  EXPECT_EQ(loaded.config.model, "transformer");
  EXPECT_EQ(loaded.config.num_hiddens, 16);
  EXPECT_EQ(loaded.config.ffn_num_hiddens, 24);
  EXPECT_EQ(loaded.config.num_heads, 2);
  EXPECT_EQ(loaded.config.num_blks, 1);
  EXPECT_FALSE(loaded.config.causal);
  EXPECT_FALSE(as_transformer(loaded).transformer_decoder().causal);
  expect_same_translations(translator, loaded, data);
  const auto file = load_npz(path);
  EXPECT_EQ(file.at("meta.transformer").to_vector(), (std::vector<double>{2, 24, 1, 0}));
  // Nothing of format 5 in it (no pre-LN): written as version 4, as before.
  EXPECT_EQ(file.at("meta.format").to_vector(), (std::vector<double>{4}));
  EXPECT_EQ(file.count("meta.norm_first"), 0u);
  EXPECT_EQ(file.count("decoder.blks.block0.attention2.W_o.weight"), 1u);

  // Damaged meta.transformer entries are errors naming the file.
  auto damaged = file;
  damaged.erase("meta.transformer");
  save_npz(path, damaged);
  EXPECT_TRUE(throws_error([&] { load_translator(path); },
                           {"load_translator", path, "'meta.transformer'"}));
  damaged["meta.transformer"] = ag::tensor({2, 24, 1}, {3}, kInt64);
  save_npz(path, damaged);
  EXPECT_TRUE(throws_error([&] { load_translator(path); }, {"load_translator", "expected 4"}));
  damaged["meta.transformer"] = ag::tensor({2, 24, 1, 7}, {4}, kInt64);
  save_npz(path, damaged);
  EXPECT_TRUE(throws_error([&] { load_translator(path); }, {"load_translator", "implausible"}));
  // Sizes that do not fit the state dict.
  damaged["meta.transformer"] = ag::tensor({2, 24, 2, 1}, {4}, kInt64);
  save_npz(path, damaged);
  EXPECT_TRUE(throws_error([&] { load_translator(path); }, {"load_translator", "block1"}));
  std::filesystem::remove(path);
}

TEST(TranslateTransformer, VersionOneFilesStillLoad) {
  // A seq2seq file as format 1 wrote it: no meta.transformer, version 1.
  const Dataset data = make_dataset({"sort", 300, 10, 1});
  ModelConfig config = one_layer_config(8);
  Translator translator = make_translator(config, data);
  const std::string path = ag::testing::scratch_file("translate_transformer", "version1.npz");
  save_translator(path, translator);
  auto file = load_npz(path);
  EXPECT_EQ(file.count("meta.transformer"), 0u);
  file["meta.format"] = ag::tensor({1}, {1}, kInt64);
  save_npz(path, file);
  const Translator loaded = load_translator(path);
  EXPECT_EQ(loaded.config.model, "bahdanau");
  EXPECT_EQ(loaded.config.num_hiddens, 8);
  EXPECT_EQ(loaded.config.encoder, "unidirectional");  // before format 3: d2l's encoder
  file["meta.format"] = ag::tensor({kFormatVersion + 1}, {1}, kInt64);
  save_npz(path, file);
  EXPECT_TRUE(throws_error([&] { load_translator(path); },
                           {"load_translator", "format version 6", "reads 1 to 5"}));
  std::filesystem::remove(path);
}

// A pre-LN Transformer (norm_first) is saved as format 5 with meta.norm_first
// and its stacks' final norms, and loads as itself: the same translations.
TEST(TranslateTransformer, PreLnSavesAndLoads) {
  const Dataset data = make_dataset({"reverse", 200, 10, 1});
  ModelConfig config = small_transformer();
  config.norm_first = true;
  Translator translator = trained_briefly(config, data);
  const std::string path = ag::testing::scratch_file("translate_transformer", "pre_ln.npz");
  save_translator(path, translator);
  auto file = load_npz(path);
  EXPECT_EQ(file.at("meta.format").to_vector(), (std::vector<double>{5}));
  EXPECT_EQ(file.at("meta.norm_first").to_vector(), (std::vector<double>{1}));
  EXPECT_EQ(file.count("encoder.norm.weight") + file.count("decoder.norm.bias"), 2u);
  Translator loaded = load_translator(path);
  EXPECT_TRUE(loaded.config.norm_first);
  expect_same_translations(translator, loaded, data);
  file["meta.norm_first"] = ag::tensor({2}, {1}, kInt64);
  save_npz(path, file);
  EXPECT_TRUE(throws_error([&] { load_translator(path); },
                           {"load_translator", path, "meta.norm_first", "0 or 1"}));
  std::filesystem::remove(path);
}

TEST(TranslateTransformer, WeightsOffInTrainingOnAtPrediction) {
  const Dataset data = make_dataset({"reverse", 300, 8, 1});
  ag::manual_seed(2);
  ModelConfig config = small_transformer();
  Translator translator = make_translator(config, data);
  nn::Transformer& model = as_transformer(translator);
  TrainOptions options;
  options.batch_size = 8;
  Seq2SeqTrainer trainer(translator, data, options);
  trainer.step();
  // Dropout 0: every attention streamed, no weights kept.
  for (const Tensor& w : model.transformer_encoder().attention_weights()) EXPECT_FALSE(w.defined());
  for (const Tensor& w : model.transformer_decoder().cross_attention_weights())
    EXPECT_FALSE(w.defined());
  const auto translations = translate(translator, {data.heldout()[0].source});
  EXPECT_EQ(translations[0].alignment.size(1),
            static_cast<int64_t>(data.heldout()[0].source.size()) + 1);
  for (const Tensor& w : model.transformer_encoder().attention_weights()) EXPECT_TRUE(w.defined());
  for (const Tensor& w : model.transformer_decoder().self_attention_weights())
    EXPECT_TRUE(w.defined());
  EXPECT_TRUE(model.is_training());  // prediction restored the mode
}

// The maps of a greedy translation: shapes [blocks, heads, Tq, Tk], rows
// that are distributions, the decoder's future zero, and the last block's
// cross-attention averaged over the heads is the translation's alignment
// (what the step-by-step decoding kept): the re-run is the same computation.
// For a model trained without the look-ahead mask too (prediction sees only
// the past either way), whose flag is left as it was.
TEST(TranslateTransformer, MapsAreTheGreedyDecodingsAttention) {
  const Dataset data = make_dataset({"reverse", 500, 12, 3});
  for (const bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal" : "no look-ahead mask");
    ag::manual_seed(4);
    ModelConfig config = small_transformer();
    config.num_blks = 2;
    config.causal = causal;
    Translator translator = make_translator(config, data);
    TrainOptions options;
    options.steps = 20;
    options.batch_size = 16;
    options.lr = 0.01;
    train_seq2seq(translator, data, options);
    std::vector<std::string> sources;
    for (const auto& e : data.heldout()) sources.push_back(e.source);
    for (const Translation& t : translate(translator, sources)) {
      const TransformerMaps maps = transformer_maps(translator, t);
      const auto S = static_cast<int64_t>(t.source_tokens.size());
      const auto n = static_cast<int64_t>(t.output_tokens.size());
      ASSERT_EQ(maps.encoder.shape(), (Shape{2, 2, S, S}));
      ASSERT_EQ(maps.decoder.shape(), (Shape{2, 2, n, n}));
      ASSERT_EQ(maps.cross.shape(), (Shape{2, 2, n, S}));
      ASSERT_EQ(maps.decoder_input_tokens.size(), static_cast<size_t>(n));
      EXPECT_EQ(maps.decoder_input_tokens[0], "<bos>");
      for (int64_t i = 1; i < n; ++i)
        EXPECT_EQ(maps.decoder_input_tokens[static_cast<size_t>(i)],
                  t.output_tokens[static_cast<size_t>(i - 1)]);
      for (const Tensor* m : {&maps.encoder, &maps.decoder, &maps.cross})
        EXPECT_TRUE(
            ag::testing::all_close(m->sum(3), ag::ones({2, 2, m->size(2)}, kFloat64), 1e-5));
      const std::vector<double> dec = maps.decoder.to_vector();
      for (int64_t q = 0; q < n; ++q)
        for (int64_t k = q + 1; k < n; ++k) ASSERT_EQ(dec[static_cast<size_t>(q * n + k)], 0.0);
      const Tensor last_block = maps.cross.narrow(0, 1, 1).squeeze(0);  // [H, n, S]
      EXPECT_TRUE(ag::testing::all_close(mean(last_block, 0), t.alignment, 1e-5, 1e-6)) << t.input;
    }
    EXPECT_EQ(as_transformer(translator).transformer_decoder().causal, causal);
    EXPECT_TRUE(translator.model->is_training());
  }
}

TEST(TranslateTransformer, MapsJsonAndHeatmaps) {
  Translation t;
  t.input = "12";
  t.output = "2";
  t.source_tokens = {"1", "2", "<eos>"};
  t.output_tokens = {"2", "<eos>"};
  t.alignment = ag::tensor({0.5, 0.5, 0, 0, 0.25, 0.75}, {2, 3}, kFloat64);
  TransformerMaps maps;
  maps.decoder_input_tokens = {"<bos>", "2"};
  maps.encoder = ag::full({1, 2, 3, 3}, 1.0 / 3, kFloat64);
  maps.decoder = ag::tensor({1, 0, 0.5, 0.5, 1, 0, 0.25, 0.75}, {1, 2, 2, 2}, kFloat64);
  maps.cross = ag::tensor({0.5, 0.5, 0, 0, 0.25, 0.75, 1, 0, 0, 0, 0, 1}, {1, 2, 2, 3}, kFloat64);
  const std::string json = translation_json(t, &maps);
  EXPECT_EQ(translation_json(t), json.substr(0, json.find(",\"decoder_input_tokens\"")) + "}");
  EXPECT_NE(json.find(",\"decoder_input_tokens\":[\"<bos>\",\"2\"],"), std::string::npos) << json;
  EXPECT_NE(json.find("\"decoder_self_attention\":[[[[1,0],[0.5,0.5]],[[1,0],[0.25,0.75]]]],"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"cross_attention\":[[[[0.5,0.5,0],[0,0.25,0.75]],[[1,0,0],[0,0,1]]]]}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"encoder_self_attention\":[[[[0.333333,0.333333,0.333333],"),
            std::string::npos)
      << json;

  const std::string png = ag::testing::scratch_file("translate_transformer", "maps.png");
  const std::vector<std::string> written = transformer_heatmaps(t, maps, png);
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[0], ag::testing::scratch_file("translate_transformer", "maps-encoder.png"));
  EXPECT_EQ(written[1], ag::testing::scratch_file("translate_transformer", "maps-decoder.png"));
  EXPECT_EQ(written[2], ag::testing::scratch_file("translate_transformer", "maps-cross.png"));
  for (const auto& path : written) {
    EXPECT_TRUE(std::filesystem::exists(path)) << path;
    std::filesystem::remove(path);
  }

  // Not a Transformer, or not a translation of this model: clear errors.
  const Dataset data = make_dataset({"reverse", 300, 8, 1});
  ModelConfig seq2seq;
  seq2seq.embed_size = seq2seq.num_hiddens = 8;
  seq2seq.num_layers = 1;
  Translator bahdanau = make_translator(seq2seq, data);
  EXPECT_TRUE(throws_error([&] { transformer_maps(bahdanau, t); },
                           {"transformer_maps", "'bahdanau'", "not a Transformer"}));
  Translator transformer = make_translator(small_transformer(), data);
  Translation bad = t;
  bad.alignment = ag::zeros({3, 3}, kFloat64);
  EXPECT_TRUE(throws_error([&] { transformer_maps(transformer, bad); },
                           {"transformer_maps", "2 output tokens"}));
  bad = t;
  bad.output_tokens = {"x", "<eos>"};
  EXPECT_TRUE(throws_error([&] { transformer_maps(transformer, bad); },
                           {"transformer_maps", "'x'", "target vocabulary"}));
}

// TrainOptions::cosine_lr: the trainer's steps are d2l's loop with Adam's
// rate set to lr (1 + cos(pi s / steps)) / 2 before step s (0-based).
TEST(TranslateTransformer, CosineLearningRateIsTheWrittenOutLoop) {
  const Dataset data = make_dataset({"reverse", 300, 8, 1});
  const ModelConfig config = small_transformer();
  TrainOptions options;
  options.steps = 3;
  options.batch_size = 8;
  options.lr = 0.01;
  options.cosine_lr = true;
  ag::manual_seed(7);
  Translator trained = make_translator(config, data);
  train_seq2seq(trained, data, options);
  options.cosine_lr = false;
  ag::manual_seed(7);
  Translator constant = make_translator(config, data);
  train_seq2seq(constant, data, options);

  ag::manual_seed(7);
  Translator by_hand = make_translator(config, data);
  const std::vector<Tensor> params = by_hand.model->parameters();
  optim::Adam adam(params, options.lr);
  BatchIterator batches(data, options.batch_size, options.seed);
  by_hand.model->train();
  by_hand.model->set_need_weights(false);
  const Tensor bos = ag::full({options.batch_size, 1}, static_cast<double>(Vocab::kBos), kInt64);
  for (int64_t s = 0; s < options.steps; ++s) {
    const Batch b = batches.next();
    const Tensor dec_input = cat({bos, b.tgt.narrow(1, 0, data.tgt_steps() - 1)}, 1);
    const Tensor loss =
        nn::masked_softmax_ce_loss((*by_hand.model)(b.src, dec_input, b.src_valid_len), b.tgt,
                                   b.tgt_valid_len)
            .sum();
    adam.zero_grad();
    loss.backward();
    nn::clip_grad_norm_(params, 1.0);
    adam.set_lr(options.lr * 0.5 * (1 + std::cos(std::numbers::pi * static_cast<double>(s) / 3.0)));
    adam.step();
  }
  const auto a = trained.model->parameters(), c = constant.model->parameters();
  bool constant_differs = false;
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(ag::testing::all_close(a[i], params[i], 1e-6, 1e-7)) << i;
    constant_differs = constant_differs || !ag::testing::all_close(c[i], params[i], 1e-6, 1e-7);
  }
  EXPECT_TRUE(constant_differs);  // the schedule changed the run

  options.cosine_lr = true;
  options.steps = 0;
  Seq2SeqTrainer no_length(trained, data, options);
  EXPECT_TRUE(
      throws_error([&] { no_length.step(); }, {"train_seq2seq", "cosine_lr", "steps >= 1"}));
}

TEST(TranslateTransformer, ReverseLearns) {
  // Release: a small Transformer (d 32, 1 block, dropout 0) on batches of
  // 32 reverses a good part of the held-out strings after 150 steps (0.39
  // measured, in 0.8 CPU seconds; an untrained one gets none). Under the
  // sanitizers (~10x slower) a shorter run must at least halve the loss.
#if defined(__SANITIZE_ADDRESS__)
  const int64_t steps = 80;  // enough for the loss to fall well below its start
  const double required_accuracy = 0.0;
#else
  const int64_t steps = 150;
  const double required_accuracy = 0.2;
#endif
  const Dataset data = make_dataset({"reverse", 20000, 300, 5});
  ag::manual_seed(1);
  ModelConfig config = small_transformer();
  config.num_hiddens = 32;
  config.ffn_num_hiddens = 64;
  config.num_heads = 4;
  Translator translator = make_translator(config, data);
  TrainOptions options;
  options.steps = steps;
  options.batch_size = 32;
  options.lr = 0.01;
  double first_loss = 0, last_loss = 0;
  const std::clock_t start = std::clock();
  train_seq2seq(translator, data, options, [&](const StepInfo& s) {
    if (s.step == 1) first_loss = s.loss;
    if (s.step == s.steps) last_loss = s.loss;
  });
  const double cpu_seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  const Evaluation e = evaluate(translator, data.heldout());
  EXPECT_LT(last_loss, 0.5 * first_loss);
  EXPECT_GE(e.accuracy, required_accuracy)
      << "after " << steps << " steps (" << cpu_seconds << " CPU s)";
  std::cout << "transformer reverse: " << steps << " steps in " << cpu_seconds << " CPU s, loss "
            << first_loss << " -> " << last_loss << ", held-out exact match " << e.accuracy << "\n";
}

}  // namespace
}  // namespace ag::translate
