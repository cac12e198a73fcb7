// The table of scoring functions: a name, one line for --help, a factory.
// Adding one to the library is its file (scoring_NAME.cpp) and one line
// here; a program adds its own with register_scoring_function (scoring.h).
#include <algorithm>

#include "scoring_functions.h"

namespace ag::nn {

namespace {

std::vector<ScoringEntry>& table() {
  static std::vector<ScoringEntry> entries{
      {"additive", "w_v^T tanh(W_q q + W_k k) (Bahdanau; d2l's AdditiveAttention)",
       make_additive_scoring},
      {"dot", "q^T k / sqrt(d) (d2l's scaled dot product); queries and keys of one width",
       make_dot_scoring},
      {"general", "q^T W_a k (Luong's general); any query and key widths", make_general_scoring},
      {"multihead",
       "--heads heads of scaled dot product over projections (d2l's MultiHeadAttention)",
       make_multihead_scoring},
      {"general_scaled", "q^T W_a k / sqrt(k), k the keys' width (general scaled as dot is)",
       make_general_scaled_scoring},
      {"keras_dot", "s q^T k, s a learned scalar (Keras' Attention, use_scale); one width",
       [](const ScoringSizes& sizes) { return make_keras_dot_scoring(sizes, true); }},
      {"keras_concat", "c sum_d tanh(q_d + k_d), c learned (Keras' Attention, concat); one width",
       [](const ScoringSizes& sizes) { return make_keras_concat_scoring(sizes, false); }},
      {"keras_additive",
       "sum_d s_d tanh(q_d + k_d), s learned (Keras' AdditiveAttention); one width",
       [](const ScoringSizes& sizes) { return make_keras_additive_scoring(sizes, true); }},
  };
  return entries;
}

}  // namespace

const std::vector<ScoringEntry>& scoring_functions() {
  return table();
}

std::string scoring_function_names() {
  std::string names;
  for (const ScoringEntry& entry : table()) names += (names.empty() ? "" : ", ") + entry.name;
  return names;
}

void register_scoring_function(ScoringEntry entry) {
  const bool plain =
      !entry.name.empty() && std::all_of(entry.name.begin(), entry.name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
      });
  AG_CHECK(plain, "register_scoring_function",
           "a name is a lower-case word of a-z, 0-9, _ and -, got '" + entry.name + "'");
  AG_CHECK(entry.make != nullptr, "register_scoring_function",
           "'" + entry.name + "' has no factory");
  AG_CHECK(find_scoring_function(entry.name) == nullptr, "register_scoring_function",
           "'" + entry.name + "' is taken (the table holds " + scoring_function_names() + ")");
  table().push_back(std::move(entry));
}

const ScoringEntry* find_scoring_function(const std::string& name) {
  for (const ScoringEntry& entry : table())
    if (entry.name == name) return &entry;
  return nullptr;
}

std::unique_ptr<ScoringFunction> make_scoring_function(const std::string& name,
                                                       const ScoringSizes& sizes) {
  if (const ScoringEntry* entry = find_scoring_function(name)) return entry->make(sizes);
  throw Error("make_scoring_function: unknown scoring function '" + name + "' (expected one of " +
              scoring_function_names() + ")");
}

}  // namespace ag::nn
