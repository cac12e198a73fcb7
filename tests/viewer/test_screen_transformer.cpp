// The transformer scene on screen: after a few frames of training on dates,
// every cell of every map (per block and head; the encoder's
// self-attention, the decoder's self-attention with the look-ahead mask's
// cells hatched, the cross-attention) has the colour of the weight the
// model state the scene exported gives when the library translates the
// shown input, one step at a time as the program does.
#include <gtest/gtest.h>

#include "attograd/translate/train.h"
#include "screen_check.h"

namespace ag::viewer_test {
namespace {

namespace tr = ag::translate;

// Every map of translating one source, per block and head: [L, H, Tq, Tk]
// float64, Tq the decoder steps (outputs and the step that wrote <eos>),
// Tk the source's tokens and <eos> (or the decoder steps so far).
struct Maps {
  Tensor enc_self, dec_self, cross;
  int64_t steps = 0;
};

// Greedy decoding of `source` one step at a time (the key/value cache), as
// predict_seq2seq and attograd-translate run it, keeping every weight.
Maps translate_keeping_maps(tr::Translator& translator, const std::string& source) {
  auto& model = static_cast<nn::Transformer&>(*translator.model);
  model.eval();
  model.set_need_weights(true);
  NoGradGuard no_grad;
  const auto [src, valid_len] =
      tr::encode_sources({source}, translator.src_vocab, translator.src_steps);
  const int64_t n = static_cast<int64_t>(valid_len.item());
  const int64_t blocks = static_cast<int64_t>(model.transformer_encoder().blks.size());
  nn::DecoderState state =
      model.decoder().init_state(model.encoder().forward(src, valid_len), valid_len);
  Maps maps;
  std::vector<Tensor> enc;
  for (const Tensor& w : model.transformer_encoder().attention_weights()) {
    enc.push_back(w.narrow(2, 0, n).narrow(3, 0, n));  // [1, H, n, n]
  }
  maps.enc_self = cat(enc, 0).to(kFloat64);
  std::vector<std::vector<Tensor>> self_rows(static_cast<size_t>(blocks)),
      cross_rows(static_cast<size_t>(blocks));
  Tensor dec_input = full({1, 1}, static_cast<double>(tr::Vocab::kBos), kInt64);
  for (int64_t step = 0; step < translator.tgt_steps; ++step) {
    dec_input = argmax(model.decoder().forward(dec_input, state), 2);
    ++maps.steps;
    for (int64_t l = 0; l < blocks; ++l) {
      const auto b = static_cast<size_t>(l);
      self_rows[b].push_back(model.transformer_decoder().self_attention_weights()[b]);
      cross_rows[b].push_back(
          model.transformer_decoder().cross_attention_weights()[b].narrow(3, 0, n));
    }
    if (static_cast<int64_t>(dec_input.item()) == tr::Vocab::kEos) break;
  }
  // Self-attention rows grow by one key a step: pad each with zeros to the
  // last step's length (the hatched cells).
  std::vector<Tensor> self_blocks, cross_blocks;
  for (int64_t l = 0; l < blocks; ++l) {
    std::vector<Tensor> rows;
    for (const Tensor& row : self_rows[static_cast<size_t>(l)]) {
      const int64_t t = row.size(3);
      rows.push_back(t == maps.steps
                         ? row
                         : cat({row, zeros({1, row.size(1), 1, maps.steps - t}, row.dtype())}, 3));
    }
    self_blocks.push_back(cat(rows, 2));
    cross_blocks.push_back(cat(cross_rows[static_cast<size_t>(l)], 2));
  }
  maps.dec_self = cat(self_blocks, 0).to(kFloat64);
  maps.cross = cat(cross_blocks, 0).to(kFloat64);
  return maps;
}

Tensor look_ahead_keep(int64_t n) {
  std::vector<double> keep(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) keep[static_cast<size_t>(i * n + j)] = 1.0;
  }
  return tensor(std::move(keep), {n, n}, kBool);
}

TEST(ScreenTransformer, MapsPerBlockAndHeadAreTheWeightsOfTheExportedModel) {
  const tr::Dataset data({tr::Task::Dates, 20000, 300, 0});
  const char* const kinds[3] = {"encoder", "decoder", "cross"};
  const char* const ids[3] = {"enc_self", "dec_self", "cross"};
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kinds[kind]);
    const SceneRun run =
        run_scene("transformer", 3,
                  {"--set", "transformer.steps_per_frame=5", "--set", "transformer.example=2",
                   "--set", std::string("transformer.maps=") + kinds[kind]});
    ASSERT_EQ(run.exit_code, 0);
    ASSERT_EQ(run.inputs.count("masked.decoder.dense.weight"), 1u)
        << "the viewer did not draw the transformer scene";
    ASSERT_GT(run.inputs.at("shown.step").item(), 0);
    ASSERT_EQ(run.inputs.at("shown.example").item(), 2);

    // The model state the scene exported, loaded into the program's model.
    tr::ModelConfig config;
    config.model = "transformer";
    config.dropout = 0.0;
    tr::Translator translator = tr::make_translator(config, data);
    translator.model->load_state_dict(with_prefix(run.inputs, "masked."));
    const Maps maps = translate_keeping_maps(translator, data.heldout()[2].source);
    const Tensor& expected = kind == 0 ? maps.enc_self : kind == 1 ? maps.dec_self : maps.cross;
    const Tensor keep = kind == 1 ? look_ahead_keep(maps.steps) : Tensor();
    for (int64_t l = 0; l < expected.size(0); ++l) {
      for (int64_t h = 0; h < expected.size(1); ++h) {
        const std::string id = std::string("transformer/") + ids[kind] + "/b" + std::to_string(l) +
                               "h" + std::to_string(h);
        SCOPED_TRACE(id);
        const Tensor map =
            expected.narrow(0, l, 1).narrow(1, h, 1).reshape({expected.size(2), expected.size(3)});
        EXPECT_TRUE(cells_match(run, id, map, keep));
      }
    }
  }
}

}  // namespace
}  // namespace ag::viewer_test
