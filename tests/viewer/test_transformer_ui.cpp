// The transformer scene under Dear ImGui's null backend (no display): its
// knobs apply; the maps it records are the weights the model used while
// decoding one step at a time (the key/value cache), per block and head;
// it draws one map per block and head of the chosen attention, shaped by the
// tokens; the ablation trains a twin without the look-ahead mask from the
// same initial parameters; a bad knob value is an ag::Error naming what is
// accepted.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cmath>
#include <sstream>

#include "null_backend.h"
#include "scene_transformer.h"
#include "test_util.h"

namespace ag::viewer {
namespace {

namespace tr = ag::translate;
using ag::testing::throws_error;

class TransformerUi : public NullBackend {
 protected:
  void frame() {
    NullBackend::frame([&] { scene.draw(); });
  }
  void set(const std::string& knob, const std::string& value) { set_knob(scene, knob, value); }
  std::vector<DrawnHeatmap> maps_drawn(const std::string& prefix) const {
    std::vector<DrawnHeatmap> out;
    for (const DrawnHeatmap& m : drawn_heatmaps()) {
      if (m.id.rfind(prefix, 0) == 0) out.push_back(m);
    }
    return out;
  }

  TransformerScene scene{Stepping::InFrame};
};

// record[field][example, block, head, row, :cols] as a vector.
std::vector<double> recorded_row(const std::map<std::string, Tensor>& inputs,
                                 const std::string& field, int64_t example, int64_t block,
                                 int64_t head, int64_t row, int64_t cols) {
  const Tensor& t = inputs.at("shown." + field);
  const Shape& s = t.shape();
  const std::vector<double> all = t.to_vector();
  const int64_t first = (((example * s[1] + block) * s[2] + head) * s[3] + row) * s[4];
  return std::vector<double>(all.begin() + first, all.begin() + first + cols);
}

TEST_F(TransformerUi, RecordedMapsAreTheWeightsOfStepByStepDecoding) {
  set("task", "reverse");
  set("steps_per_frame", "2");
  set("example", "3");
  EXPECT_EQ(scene.example(), 3);
  frame();
  frame();
  EXPECT_EQ(scene.session().steps(), 4);
  set("paused", "yes");
  frame();
  EXPECT_EQ(scene.session().steps(), 4);

  // Greedy decoding one step at a time, as predict_seq2seq runs it, keeping
  // every block's weights of every step.
  const auto inputs = scene.inputs();
  TransformerTrainer& trainer = scene.trainer();
  nn::Transformer& model = trainer.transformer(0);
  const Tensor src = inputs.at("src"), valid_len = inputs.at("src_valid_len");
  const int64_t batch = src.size(0), tgt = trainer.data_set().tgt_steps();
  const std::vector<double> valid = valid_len.to_vector();
  const std::vector<double> rows = inputs.at("shown.masked.rows").to_vector();
  const std::vector<double> output = inputs.at("shown.masked.output").to_vector();
  model.eval();
  NoGradGuard no_grad;
  const std::vector<Tensor> enc = model.encoder().forward(src, valid_len);
  const std::vector<Tensor> enc_weights = model.transformer_encoder().attention_weights();
  nn::DecoderState state = model.decoder().init_state(enc, valid_len);
  Tensor dec_input = full({batch, 1}, static_cast<double>(tr::Vocab::kBos), kInt64);
  for (int64_t step = 0; step < tgt; ++step) {
    const Tensor logits = model.decoder().forward(dec_input, state);
    dec_input = argmax(logits, 2);
    const std::vector<double> next = dec_input.to_vector();
    for (int64_t b = 0; b < batch; ++b) {
      if (step >= static_cast<int64_t>(rows[static_cast<size_t>(b)])) continue;
      if (step + 1 < static_cast<int64_t>(rows[static_cast<size_t>(b)]) ||
          next[static_cast<size_t>(b)] != static_cast<double>(tr::Vocab::kEos)) {
        EXPECT_EQ(output[static_cast<size_t>(b * tgt + step)], next[static_cast<size_t>(b)]);
      }
      for (int64_t l = 0; l < trainer.blocks(); ++l) {
        for (int64_t h = 0; h < trainer.heads(); ++h) {
          // Self-attention: step `step` over the step + 1 inputs so far.
          const Tensor self = model.transformer_decoder().self_attention_weights()[l];
          const std::vector<double> self_row =
              self.narrow(0, b, 1).narrow(1, h, 1).reshape({step + 1}).to_vector();
          const std::vector<double> shown_self =
              recorded_row(inputs, "masked.dec_self", b, l, h, step, tgt);
          for (int64_t k = 0; k < tgt; ++k) {
            EXPECT_NEAR(shown_self[k], k <= step ? self_row[k] : 0.0, 2e-6)
                << "self-attention, example " << b << " block " << l << " head " << h << " step "
                << step << " key " << k;
          }
          const Tensor cross = model.transformer_decoder().cross_attention_weights()[l];
          const int64_t cols = static_cast<int64_t>(valid[static_cast<size_t>(b)]);
          const std::vector<double> cross_row =
              cross.narrow(0, b, 1).narrow(1, h, 1).reshape({src.size(1)}).to_vector();
          const std::vector<double> shown_cross =
              recorded_row(inputs, "masked.cross", b, l, h, step, cols);
          for (int64_t k = 0; k < cols; ++k) EXPECT_NEAR(shown_cross[k], cross_row[k], 2e-6);
        }
      }
    }
  }
  for (int64_t l = 0; l < trainer.blocks(); ++l) {
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t n = static_cast<int64_t>(valid[static_cast<size_t>(b)]);
      for (int64_t q = 0; q < n; ++q) {
        const std::vector<double> expected = enc_weights[l]
                                                 .narrow(0, b, 1)
                                                 .narrow(1, 1, 1)
                                                 .narrow(2, q, 1)
                                                 .reshape({src.size(1)})
                                                 .to_vector();
        const std::vector<double> shown = recorded_row(inputs, "masked.enc_self", b, l, 1, q, n);
        for (int64_t k = 0; k < n; ++k) EXPECT_NEAR(shown[k], expected[k], 2e-6);
      }
    }
  }
}

TEST_F(TransformerUi, DrawsOneMapPerBlockAndHeadShapedByTheTokens) {
  set("paused", "yes");
  set("example", "1");
  const tr::Example& example = scene.trainer().data_set().heldout()[1];
  const int64_t source = static_cast<int64_t>(example.source.size()) + 1;  // and <eos>
  const int64_t rows = static_cast<int64_t>(scene.inputs().at("shown.masked.rows").to_vector()[1]);
  const std::string names[3] = {"encoder", "decoder", "cross"};
  const int64_t expected_rows[3] = {source, rows, rows}, expected_cols[3] = {source, rows, source};
  for (int m = 0; m < 3; ++m) {
    SCOPED_TRACE(names[m]);
    set("maps", names[m]);
    frame();
    const auto drawn = maps_drawn(std::string("transformer/") + TransformerScene::kMapIds[m] + "/");
    ASSERT_EQ(drawn.size(), 8u);  // 2 blocks x 4 heads
    EXPECT_EQ(drawn[5].id, std::string("transformer/") + TransformerScene::kMapIds[m] + "/b1h1");
    for (const DrawnHeatmap& map : drawn) {
      EXPECT_EQ(map.rows, expected_rows[m]);
      EXPECT_EQ(map.cols, expected_cols[m]);
      EXPECT_GE(map.cell, 5.0f) << "cells too small to read at 1600x1000";
    }
  }
}

TEST_F(TransformerUi, TheAblationTrainsAnUnmaskedTwinFromTheSameStart) {
  set("paused", "yes");
  const auto alone = scene.trainer().transformer(0).state_dict();
  std::map<std::string, std::vector<double>> initial;
  for (const auto& [name, t] : alone) initial[name] = t.to_vector();
  set("ablation", "1");
  ASSERT_EQ(scene.trainer().models(), 2);
  EXPECT_TRUE(scene.trainer().transformer(0).transformer_decoder().causal);
  EXPECT_FALSE(scene.trainer().transformer(1).transformer_decoder().causal);
  EXPECT_TRUE(scene.session().paused());
  for (const auto& [name, t] : scene.trainer().transformer(0).state_dict()) {
    EXPECT_EQ(t.to_vector(), initial.at(name)) << name;
  }
  set("steps_per_frame", "2");
  set("paused", "no");
  frame();
  const auto inputs = scene.inputs();
  EXPECT_EQ(inputs.count("shown.unmasked.loss"), 1u);
  EXPECT_EQ(inputs.count("unmasked.decoder.dense.weight"), 1u);
  std::ostringstream out;
  scene.print_stats(out);
  EXPECT_NE(out.str().find("unmasked_accuracy "), std::string::npos);
  EXPECT_NE(out.str().find("unmasked_loss "), std::string::npos);
  set("ablation", "0");
  EXPECT_EQ(scene.trainer().models(), 1);
  EXPECT_EQ(scene.inputs().count("shown.unmasked.loss"), 0u);
}

TEST_F(TransformerUi, BadKnobValuesAreErrorsNamingWhatIsAccepted) {
  auto scenes = make_scenes();
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "transformer.task=french"); },
                           {"french", "dates | reverse | sort"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "transformer.ablation=2"); }, {"0 | 1"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "transformer.maps=all"); },
                           {"encoder | decoder | cross"}));
  EXPECT_TRUE(throws_error([&] { apply_setting(scenes, "transformer.example=9"); }, {"9"}));
}

}  // namespace
}  // namespace ag::viewer
