// Text, JSON and heatmap views of a translation (report.h).
#include "attograd/translate/report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>

#include "attograd/nn/transformer.h"
#include "attograd/translate/cmudict.h"
#include "attograd/translate/tasks.h"
#include "attograd/viz.h"

namespace ag::translate {

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

namespace {

std::string json_strings(const std::vector<std::string>& strings) {
  std::string out = "[";
  for (size_t i = 0; i < strings.size(); ++i) {
    if (i > 0) out += ',';
    out += json_quote(strings[i]);
  }
  return out + "]";
}

// A tensor of any rank as nested JSON arrays of numbers (%.6g).
std::string json_array(const Tensor& x) {
  const std::vector<double> values = x.to_vector();
  const Shape& shape = x.shape();
  std::string out;
  size_t next = 0;
  // Writes the sub-array at `dim` whose first value is values[next].
  const auto write = [&](const auto& self, size_t dim) -> void {
    out += '[';
    for (int64_t i = 0; i < shape[dim]; ++i) {
      if (i > 0) out += ',';
      if (dim + 1 < shape.size()) {
        self(self, dim + 1);
      } else {
        char number[32];
        std::snprintf(number, sizeof number, "%.6g", values[next++]);
        out += number;
      }
    }
    out += ']';
  };
  write(write, 0);
  return out;
}

// Puts back the model's training mode and its decoder's look-ahead flag,
// whatever happens between.
class TransformerStateRestorer {
 public:
  explicit TransformerStateRestorer(nn::Transformer& model)
      : model_(model),
        training_(model.is_training()),
        causal_(model.transformer_decoder().causal) {}
  ~TransformerStateRestorer() {
    model_.train(training_);
    model_.transformer_decoder().causal = causal_;
  }
  TransformerStateRestorer(const TransformerStateRestorer&) = delete;
  TransformerStateRestorer& operator=(const TransformerStateRestorer&) = delete;

 private:
  nn::Transformer& model_;
  bool training_, causal_;
};

// Per block [1, H, Tq, Tk] -> [blocks, H, Tq, keys] float64, the keys cut to
// the first `keys` (the valid source tokens).
Tensor stack_blocks(const std::vector<Tensor>& per_block, int64_t keys) {
  std::vector<Tensor> maps;
  for (const Tensor& w : per_block) {
    AG_CHECK(w.defined() && w.dim() == 4 && w.size(0) == 1 && w.size(3) >= keys, "transformer_maps",
             "an attention kept no weights of shape [1, H, Tq, >= keys]");
    maps.push_back(w.narrow(0, 0, 1).squeeze(0).narrow(2, 0, keys).to(kFloat64));
  }
  return stack(maps, 0);
}

}  // namespace

TransformerMaps transformer_maps(Translator& translator, const Translation& t) {
  auto* model = dynamic_cast<nn::Transformer*>(translator.model.get());
  AG_CHECK(model != nullptr, "transformer_maps",
           "the translator's model is '" + translator.config.model + "', not a Transformer");
  const auto rows = static_cast<int64_t>(t.output_tokens.size());
  AG_CHECK(
      rows > 0 && t.alignment.defined() && t.alignment.dim() == 2 && t.alignment.size(0) == rows,
      "transformer_maps",
      "\"" + t.input + "\": the translation has " + std::to_string(rows) +
          " output tokens and an alignment of another shape (not one of translate()'s)");
  TransformerStateRestorer restore(*model);
  model->eval();
  model->set_need_weights(true);
  // Greedy decoding fed the decoder its own outputs one at a time; given all
  // at once, the look-ahead mask keeps each step to the steps before it, as
  // the cache did.
  model->transformer_decoder().causal = true;
  NoGradGuard no_grad;
  const auto [src, src_valid_len] =
      encode_sources({t.input}, translator.src_vocab, translator.src_steps, translator.task.source);
  const auto keys = static_cast<int64_t>(src_valid_len.item());
  // Decoder inputs: <bos>, then each emitted token but the last.
  TransformerMaps maps;
  maps.decoder_input_tokens.push_back(Vocab::reserved_tokens()[Vocab::kBos]);
  maps.decoder_input_tokens.insert(maps.decoder_input_tokens.end(), t.output_tokens.begin(),
                                   t.output_tokens.end() - 1);
  std::vector<double> inputs;
  for (const auto& token : maps.decoder_input_tokens) {
    AG_CHECK(translator.tgt_vocab.contains(token), "transformer_maps",
             "output token '" + token + "' is not in the model's target vocabulary");
    inputs.push_back(static_cast<double>(translator.tgt_vocab.index(token)));
  }
  nn::DecoderState state =
      model->decoder().init_state(model->encoder().forward(src, src_valid_len), src_valid_len);
  model->decoder().forward(tensor(inputs, {1, rows}, kInt64), state);
  maps.encoder = stack_blocks(model->transformer_encoder().attention_weights(), keys)
                     .narrow(2, 0, keys);  // queries: the valid source tokens too
  maps.decoder = stack_blocks(model->transformer_decoder().self_attention_weights(), rows);
  maps.cross = stack_blocks(model->transformer_decoder().cross_attention_weights(), keys);
  return maps;
}

std::string translation_json(const Translation& t, const TransformerMaps* maps) {
  std::string out = "{\"input\":";
  out += json_quote(t.input);
  out += ",\"output\":";
  out += json_quote(t.output);
  out += ",\"source_tokens\":";
  out += json_strings(t.source_tokens);
  out += ",\"output_tokens\":";
  out += json_strings(t.output_tokens);
  out += ",\"weights\":";
  out += json_array(t.alignment);
  if (maps != nullptr) {
    out += ",\"decoder_input_tokens\":";
    out += json_strings(maps->decoder_input_tokens);
    out += ",\"encoder_self_attention\":";
    out += json_array(maps->encoder);
    out += ",\"decoder_self_attention\":";
    out += json_array(maps->decoder);
    out += ",\"cross_attention\":";
    out += json_array(maps->cross);
  }
  if (!t.beam.empty()) {
    out += ",\"beam\":[";
    for (size_t i = 0; i < t.beam.size(); ++i) {
      const Translation::Candidate& c = t.beam[i];
      char numbers[96];
      std::snprintf(numbers, sizeof numbers, ",\"score\":%.17g,\"log_prob\":%.17g,\"finished\":%s",
                    c.score, c.log_prob, c.finished ? "true" : "false");
      out += (i ? ",{\"output\":" : "{\"output\":") + json_quote(c.output) + numbers +
             ",\"weights\":" + json_array(c.alignment) + "}";
    }
    out += "]";
  }
  return out + "}";
}

std::string alignment_table(const Translation& t) {
  const std::vector<double> w = t.alignment.to_vector();
  const int64_t rows = t.alignment.size(0), cols = t.alignment.size(1);
  size_t row_label = 0, cell = 4;  // "0.00"
  for (const auto& token : t.output_tokens) row_label = std::max(row_label, token.size());
  for (const auto& token : t.source_tokens) cell = std::max(cell, token.size());
  std::string out;
  // Appends `s` right-aligned in `width` columns.
  const auto put = [&out](const std::string& s, size_t width) {
    out.append(width > s.size() ? width - s.size() : 0, ' ');
    out += s;
  };
  put("", row_label);
  for (const auto& token : t.source_tokens) put(token, cell + 1);
  out += "\n";
  for (int64_t r = 0; r < rows; ++r) {
    put(t.output_tokens[static_cast<size_t>(r)], row_label);
    for (int64_t c = 0; c < cols; ++c) {
      char number[32];
      std::snprintf(number, sizeof number, "%.2f", w[static_cast<size_t>(r * cols + c)]);
      put(number, cell + 1);
    }
    out += "\n";
  }
  return out;
}

void alignment_heatmap(const Translation& t, const std::string& path) {
  AG_CHECK(t.alignment.defined() && t.alignment.size(0) > 0, "alignment_heatmap",
           "\"" + t.input + "\" has no output step to draw");
  viz::HeatmapOptions options;
  options.xlabel = "Source";
  options.ylabel = "Output";
  options.xticklabels = t.source_tokens;
  options.yticklabels = t.output_tokens;
  options.vmin = 0.0;
  options.vmax = 1.0;
  viz::show_heatmaps(t.alignment, path, options);
}

}  // namespace ag::translate

namespace ag::translate {

std::vector<std::string> transformer_heatmaps(const Translation& t, const TransformerMaps& maps,
                                              const std::string& path) {
  // STEM.EXT -> STEM-<what>.EXT (the extension picks PNG or SVG)
  const size_t dot = path.find_last_of('.'), slash = path.find_last_of('/');
  const bool has_extension =
      dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string stem = has_extension ? path.substr(0, dot) : path;
  const std::string extension = has_extension ? path.substr(dot) : "";
  struct Grid {
    const char* name;
    const Tensor& maps;
    const char *xlabel, *ylabel;
    const std::vector<std::string>&xticks, &yticks;
  };
  const Grid grids[] = {
      {"encoder", maps.encoder, "Key (source)", "Query (source)", t.source_tokens, t.source_tokens},
      {"decoder", maps.decoder, "Key (decoder input)", "Query (output step)",
       maps.decoder_input_tokens, t.output_tokens},
      {"cross", maps.cross, "Key (source)", "Query (output step)", t.source_tokens,
       t.output_tokens},
  };
  std::vector<std::string> written;
  for (const Grid& g : grids) {
    AG_CHECK(g.maps.defined() && g.maps.dim() == 4, "transformer_heatmaps",
             std::string("the ") + g.name + " maps must be [blocks, heads, Tq, Tk]");
    viz::HeatmapOptions options;
    options.xlabel = g.xlabel;
    options.ylabel = g.ylabel;
    options.xticklabels = g.xticks;
    options.yticklabels = g.yticks;
    options.vmin = 0.0;
    options.vmax = 1.0;
    for (int64_t b = 0; b < g.maps.size(0); ++b)
      for (int64_t h = 0; h < g.maps.size(1); ++h)
        options.titles.push_back("block " + std::to_string(b) + ", head " + std::to_string(h));
    // The decoder's look-ahead mask: hatched, not drawn as weight 0.
    if (&g.maps == &maps.decoder)
      options.keep_mask = nn::causal_mask(g.maps.size(2), g.maps.size(3));
    written.push_back(stem + "-" + g.name + extension);
    viz::show_heatmaps(g.maps, written.back(), options);
  }
  return written;
}

std::string summary_line(const std::string& split, const Evaluation& e) {
  std::string line = split + ":";
  for (const Figure& f : e.figures)
    if (!f.text.empty()) line += (line.back() == ':' ? " " : ", ") + f.text;
  return line;
}

// One word a line ("-": stdin); blank lines are skipped, spaces, tabs and a
// CR around a word are not part of it.
std::vector<ListedWord> read_words(const std::string& path) {
  std::ifstream file;
  if (path != "-") {
    file.open(path);
    if (!file) throw ag::Error("--predict-file: cannot read '" + path + "'");
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::vector<ListedWord> words;
  int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;
    words.push_back({number, line.substr(begin, line.find_last_not_of(" \t\r") + 1 - begin)});
  }
  if (in.bad()) throw ag::Error("--predict-file: error reading '" + path + "'");
  if (words.empty()) throw ag::Error("--predict-file: no word in '" + path + "'");
  return words;
}

std::string pronunciation_lines(const std::string& shown, const Pronunciation& p,
                                bool with_source) {
  std::string out;
  for (size_t r = 0; r < p.variants.size(); ++r) {
    char posterior[64];
    std::snprintf(posterior, sizeof posterior, "\t%zu\t%.6g\t", r + 1, p.variants[r].posterior);
    out += shown + posterior + p.variants[r].phonemes +
           (with_source ? std::string("\t") + source_name(p.source) : "") + '\n';
  }
  return out;
}

namespace {

// The probabilities of one variant as JSON members (no braces).
std::string variant_figures(const PronunciationVariant& v) {
  char numbers[160];
  std::snprintf(numbers, sizeof numbers,
                "\"posterior\":%.17g,\"confidence\":%.17g,\"log_prob\":%.17g,\"end_prob\":%.17g,"
                "\"phoneme_probs\":",
                v.posterior, v.confidence, v.log_prob, v.end_prob);
  return numbers + json_array(tensor(v.phoneme_probs,
                                     {static_cast<int64_t>(v.phoneme_probs.size())}, kFloat64));
}

}  // namespace

std::string pronunciation_json(const std::string& shown, const Pronunciation& p) {
  const PronunciationVariant& best = p.variants.at(0);
  std::string out = "{\"input\":" + json_quote(shown) + ",\"word\":" + json_quote(p.word) +
                    ",\"output\":" + json_quote(best.phonemes) + ",\"source\":\"" +
                    source_name(p.source) + "\"," + variant_figures(best);
  if (p.source == PronunciationSource::Model) {
    out += ",\"source_tokens\":" + json_strings(p.source_tokens) +
           ",\"output_tokens\":" + json_strings(best.output_tokens) +
           ",\"weights\":" + json_array(best.alignment);
  }
  out += ",\"variants\":[";
  for (size_t r = 0; r < p.variants.size(); ++r) {
    const PronunciationVariant& v = p.variants[r];
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, ",\"rank\":%zu,\"score\":%.17g,\"finished\":%s,", r + 1,
                  v.score, v.finished ? "true" : "false");
    out += (r ? ",{\"output\":" : "{\"output\":") + json_quote(v.phonemes) + numbers +
           variant_figures(v) + "}";
  }
  return out + "]}";
}

// --evaluate: scores the model on every entry of a dictionary; the summary to
// stderr, the entries furthest off to stdout.
Evaluation evaluate_dictionary(Translator& translator, const std::string& path, int64_t beam) {
  const Task& task = find_task(translator.task.name);
  require_dictionary(task, "--evaluate");
  const Cmudict dict = read_cmudict(path);
  std::fprintf(stderr, "%s\n", cmudict_summary(path, dict).c_str());
  const std::vector<Example> examples = task.dictionary_examples(dict);
  const Evaluation e = evaluate(translator, examples, 1000, beam);
  std::fprintf(stderr, "%s\n", summary_line(path, e).c_str());
  std::vector<size_t> order(e.nearest.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return e.nearest[a].distance > e.nearest[b].distance;
  });
  constexpr size_t kWorst = 20;
  for (size_t k = 0; k < std::min(kWorst, order.size()) && e.nearest[order[k]].distance > 0; ++k) {
    const size_t i = order[k];
    std::cout << examples[i].source << '\t' << e.outputs[i] << '\t'
              << examples[i].answers()[e.nearest[i].nearest] << '\t' << e.nearest[i].distance
              << '\n';
  }
  return e;
}

}  // namespace ag::translate
