// The source text a translate or transformer scene showed, read back from the
// inputs it dumped (`src`, `src_valid_len`) with the vocabulary of a model it
// saved. Screen tests take the shown input from there rather than generating
// the scene's data again: the page draws its data with libc++'s
// distributions, which differ from libstdc++'s.
#pragma once

#include <string>
#include <vector>

#include "attograd/translate/model.h"
#include "screen_check.h"

namespace ag::viewer_test {

inline std::string dumped_source(const SceneRun& run, const std::string& saved_model,
                                 int64_t example) {
  const translate::Translator saved = translate::load_translator(saved_model);
  const std::vector<double> src = slice_of(run.inputs.at("src"), example).to_vector();
  const auto length = static_cast<int64_t>(
      run.inputs.at("src_valid_len").to_vector()[static_cast<size_t>(example)]);
  std::vector<std::string> tokens;  // the characters, without the final <eos>
  for (int64_t i = 0; i + 1 < length; ++i) {
    tokens.push_back(saved.src_vocab.token(static_cast<int64_t>(src[static_cast<size_t>(i)])));
  }
  return translate::detokenize_chars(tokens);
}

}  // namespace ag::viewer_test
