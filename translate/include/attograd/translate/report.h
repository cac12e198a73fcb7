// How attograd-translate shows a translation: a small text table of the
// alignment, a JSON line, a heatmap with the tokens as tick labels; for the
// Transformer also every block's and head's attention maps (d2l's figures of
// section "The Transformer Architecture"); and the figures of an evaluation,
// word lists in and a dictionary scored.
#pragma once

#include <string>
#include <vector>

#include "attograd/translate/pronouncer.h"
#include "attograd/translate/train.h"

namespace ag::translate {

// `text` as a JSON string literal, quotes included: ", \ and control
// characters escaped (\n, \t, ..., \u00XX), other bytes as they are (UTF-8
// passes through).
std::string json_quote(const std::string& text);

// The Transformer's attention maps of one translation, per block and head,
// each [blocks, heads, Tq, Tk] float64, as d2l's figures lay them out:
//   encoder  the encoder's self-attention: source tokens (queries) x source tokens (keys)
//   decoder  the decoder's self-attention: output steps x decoder inputs
//            (<bos>, then the outputs but the last); zero above the diagonal
//   cross    the encoder-decoder attention: output steps x source tokens
// An output step is the step that emitted output_tokens[i]. The source axis
// holds the valid tokens only (the input's characters and <eos>).
struct TransformerMaps {
  Tensor encoder, decoder, cross;
  std::vector<std::string> decoder_input_tokens;  // the decoder map's key labels
};

// Runs translator's Transformer once on translation.input and on its own
// greedy output (fed as the decoder input, the look-ahead mask on, in eval
// mode): the same computation, step for step, as the greedy decoding that
// produced the output, whose key/value cache sees only the past steps (with
// the mask or without, so a model trained without it is shown as it
// predicted). The model's modes are restored. Throws ag::Error when the model
// is not a Transformer or the translation is not one of its outputs.
TransformerMaps transformer_maps(Translator& translator, const Translation& translation);

// One line of JSON: {"input", "output", "source_tokens", "output_tokens",
// "weights"} (weights: one array per output token, one number per source
// token: the decoder's alignment()). With `maps` (the Transformer) also
// "decoder_input_tokens", "encoder_self_attention", "decoder_self_attention"
// and "cross_attention", each nested [blocks][heads][Tq][Tk]. After beam
// search also "beam": every candidate's {"output", "score", "log_prob",
// "finished", "weights"}, best first.
std::string translation_json(const Translation& translation, const TransformerMaps* maps = nullptr);

// The alignment as a table: a header row of source tokens, then one row per
// output token with its weights (2 decimals).
std::string alignment_table(const Translation& translation);

// The alignment as a heatmap (ag::viz::show_heatmaps, .png or .svg), source
// tokens along x, output tokens along y.
void alignment_heatmap(const Translation& translation, const std::string& path);

// The Transformer's maps as three [blocks, heads] grids of heatmaps (rows
// blocks, columns heads; titles "block b, head h"), the tokens as tick
// labels, written beside `path` as STEM-encoder.EXT, STEM-decoder.EXT and
// STEM-cross.EXT. Returns the three paths.
std::vector<std::string> transformer_heatmaps(const Translation& translation,
                                              const TransformerMaps& maps, const std::string& path);

// One line, headed by `split` ("dev", "test", a file name): the texts of the
// evaluation's figures (its task's), e.g. "test: 6171 words, WER 22.38%,
// PER 5.26% (2401 edits / 45632 phonemes)".
std::string summary_line(const std::string& split, const Evaluation& evaluation);

// A word list for --predict-file: one word a line ("-": stdin), each with its
// line number (from 1); blank lines are skipped, spaces, tabs and a CR around
// a word are not part of it. No word, or a file that cannot be read: ag::Error.
struct ListedWord {
  int64_t line = 0;
  std::string text;
};
std::vector<ListedWord> read_words(const std::string& path);

// A word's lines in Sequitur's n-best format, one line per variant,
// "word<TAB>rank<TAB>posterior<TAB>phonemes" (rank from 1), and with
// `with_source` a fifth column, "lexicon" or "model". `shown` is the word as
// the list gave it.
std::string pronunciation_lines(const std::string& shown, const Pronunciation& p,
                                bool with_source = false);
// One JSON line: {"input" (as the list gave it), "word" (as read), "output"
// (the answer: variants[0]'s phonemes), "source", "confidence", "log_prob",
// "phoneme_probs", "end_prob", "posterior", then for a model's answer
// "source_tokens", "output_tokens", "weights" (as translation_json), and
// "variants": each one's {"output", "rank", "posterior", "confidence",
// "log_prob", "score", "phoneme_probs", "end_prob", "finished"}}.
std::string pronunciation_json(const std::string& shown, const Pronunciation& p);

// --evaluate: scores a model of a task that reads a dictionary (greedy, or
// beam search with `beam` candidates) on every entry of a dictionary in
// CMUdict's format, made into examples as the task makes them; the summary to
// stderr, the 20 examples furthest off to stdout as
// "source<TAB>output<TAB>nearest<TAB>edits". ag::Error for a model of
// another task.
Evaluation evaluate_dictionary(Translator& translator, const std::string& path, int64_t beam);

}  // namespace ag::translate
