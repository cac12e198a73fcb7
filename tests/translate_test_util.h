// Helpers shared by the translate library's tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attograd/translate/train.h"

namespace ag::translate {

// A Bahdanau model of one GRU layer whose embedding and hidden state are
// `width` wide: the small model most translate tests build.
inline ModelConfig one_layer_config(int64_t width) {
  ModelConfig config;
  config.embed_size = config.num_hiddens = width;
  config.num_layers = 1;
  return config;
}

// `a` and `b` translate every held-out source of `data` to the same output
// with the same alignment, bit for bit (a model and the same model saved and
// loaded, say).
inline void expect_same_translations(Translator& a, Translator& b, const Dataset& data) {
  std::vector<std::string> sources;
  for (const auto& e : data.heldout()) sources.push_back(e.source);
  const auto from_a = translate(a, sources);
  const auto from_b = translate(b, sources);
  for (size_t i = 0; i < sources.size(); ++i) {
    ASSERT_EQ(from_a[i].output, from_b[i].output) << sources[i];
    ASSERT_EQ(from_a[i].alignment.to_vector(), from_b[i].alignment.to_vector()) << sources[i];
  }
}

}  // namespace ag::translate
