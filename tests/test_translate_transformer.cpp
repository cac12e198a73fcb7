// translate/ with the Transformer (issue 23): make_model("transformer") and
// its sizes, saving and loading (meta.transformer, the look-ahead flag,
// version 1 files still read), the attention weights off in training and on
// at prediction.
#include <filesystem>

#include "attograd/nn/transformer.h"
#include "attograd/translate/train.h"
#include "test_util.h"

namespace ag::translate {
namespace {

using ag::testing::throws_error;

std::string temp_file(const std::string& name) {
  static const ag::testing::ScratchDir dir("translate_transformer");
  return dir / name;
}

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

TEST(TranslateTransformer, SaveLoadKeepsSizesMaskAndPredictions) {
  const Dataset data({Task::Reverse, 500, 30, 2});
  ag::manual_seed(3);
  ModelConfig config = small_transformer();
  config.causal = false;
  Translator translator = make_translator(config, data);
  TrainOptions options;
  options.steps = 3;
  options.batch_size = 16;
  train_seq2seq(translator, data, options);
  const std::string path = temp_file("transformer.npz");
  save_translator(path, translator);
  Translator loaded = load_translator(path);
  EXPECT_EQ(loaded.config.model, "transformer");
  EXPECT_EQ(loaded.config.num_hiddens, 16);
  EXPECT_EQ(loaded.config.ffn_num_hiddens, 24);
  EXPECT_EQ(loaded.config.num_heads, 2);
  EXPECT_EQ(loaded.config.num_blks, 1);
  EXPECT_FALSE(loaded.config.causal);
  EXPECT_FALSE(as_transformer(loaded).transformer_decoder().causal);
  std::vector<std::string> sources;
  for (const auto& e : data.heldout()) sources.push_back(e.source);
  const auto before = translate(translator, sources);
  const auto after = translate(loaded, sources);
  for (size_t i = 0; i < sources.size(); ++i) {
    ASSERT_EQ(before[i].output, after[i].output) << sources[i];
    ASSERT_EQ(before[i].alignment.to_vector(), after[i].alignment.to_vector()) << sources[i];
  }
  const auto file = load_npz(path);
  EXPECT_EQ(file.at("meta.transformer").to_vector(), (std::vector<double>{2, 24, 1, 0}));
  EXPECT_EQ(file.at("meta.format").to_vector(), (std::vector<double>{kFormatVersion}));
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
  const Dataset data({Task::Sort, 300, 10, 1});
  ModelConfig config;
  config.embed_size = config.num_hiddens = 8;
  config.num_layers = 1;
  Translator translator = make_translator(config, data);
  const std::string path = temp_file("version1.npz");
  save_translator(path, translator);
  auto file = load_npz(path);
  EXPECT_EQ(file.count("meta.transformer"), 0u);
  file["meta.format"] = ag::tensor({1}, {1}, kInt64);
  save_npz(path, file);
  const Translator loaded = load_translator(path);
  EXPECT_EQ(loaded.config.model, "bahdanau");
  EXPECT_EQ(loaded.config.num_hiddens, 8);
  file["meta.format"] = ag::tensor({kFormatVersion + 1}, {1}, kInt64);
  save_npz(path, file);
  EXPECT_TRUE(throws_error([&] { load_translator(path); },
                           {"load_translator", "format version 3", "reads 1 to 2"}));
  std::filesystem::remove(path);
}

TEST(TranslateTransformer, WeightsOffInTrainingOnAtPrediction) {
  const Dataset data({Task::Reverse, 300, 8, 1});
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

}  // namespace
}  // namespace ag::translate
