// What the translate and transformer screen tests compare a scene with: the
// text it showed (dumped_source) and what attograd-translate prints for a
// model the scene saved (program_json).
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "attograd/translate/model.h"
#include "screen_check.h"
#include "test_util.h"

namespace ag::viewer_test {

// The source text the scene showed, read back from the inputs it dumped
// (`src`, `src_valid_len`) with the vocabulary of a model it saved. Screen
// tests take the shown input from there rather than generating the scene's
// data again: the page draws its data with libc++'s distributions, which
// differ from libstdc++'s.

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

// attograd-translate --load MODEL --predict TEXT --json: its one line,
// written to `out` (default: MODEL.json, beside a scratch model).
inline std::string program_json(const std::string& model, const std::string& text,
                                const std::string& out = "") {
  const std::string path = out.empty() ? model + ".json" : out;
  // "a.npz+b.npz": an ensemble, each file its own --load.
  std::string loads;
  for (size_t begin = 0; begin <= model.size();) {
    const size_t plus = std::min(model.find('+', begin), model.size());
    loads += " --load '" + model.substr(begin, plus - begin) + "'";
    begin = plus + 1;
  }
  const std::string command =
      translate_program() + loads + " --predict '" + text + "' --json >'" + path + "' 2>&1";
  const int status = std::system(command.c_str());
  const std::string json = ag::testing::read_file(path);
  AG_CHECK(status == 0, "program_json", command + " failed: " + json);
  return json;
}

}  // namespace ag::viewer_test
