// How attograd-translate shows a translation: a small text table of the
// alignment, a JSON line, a heatmap with the tokens as tick labels.
#pragma once

#include <string>

#include "attograd/translate/train.h"

namespace ag::translate {

// `text` as a JSON string literal, quotes included: ", \ and control
// characters escaped (\n, \t, ..., \u00XX), other bytes as they are (UTF-8
// passes through).
std::string json_quote(const std::string& text);

// One line of JSON: {"input", "output", "source_tokens", "output_tokens",
// "weights"} (weights: one array per output token, one number per source token).
std::string translation_json(const Translation& translation);

// The alignment as a table: a header row of source tokens, then one row per
// output token with its weights (2 decimals).
std::string alignment_table(const Translation& translation);

// The alignment as a heatmap (ag::viz::show_heatmaps, .png or .svg), source
// tokens along x, output tokens along y.
void alignment_heatmap(const Translation& translation, const std::string& path);

}  // namespace ag::translate
