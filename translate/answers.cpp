// attograd-translate's answers (see answers.h).
#include "answers.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "attograd/translate/pronouncer.h"
#include "attograd/translate/report.h"

namespace ag::translate::program {

namespace {

// --heatmap's path for answer `index` of `count`: FILE.png for one,
// FILE-1.png, FILE-2.png, ... for more.
std::string with_index(const std::string& path, size_t index, size_t count) {
  if (count == 1) return path;
  const size_t dot = path.find_last_of('.');
  const size_t slash = path.find_last_of('/');
  std::string suffix = "-";  // (GCC 12's -Wrestrict misreads "-" + std::to_string(...))
  suffix += std::to_string(index + 1);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

// A model's variant as a Translation, for alignment_heatmap.
Translation drawn(const Pronunciation& p, const PronunciationVariant& v) {
  return {.input = p.word,
          .output = v.phonemes,
          .source_tokens = p.source_tokens,
          .output_tokens = v.output_tokens,
          .token_log_probs = {},  // the picture needs the weights only
          .alignment = v.alignment,
          .beam = {}};
}

}  // namespace

void show_translations(Translator& translator, const Options& o) {
  const Task& task = find_task(translator.task.name);
  std::vector<std::string> texts = o.predict;
  if (task.read_input)
    for (std::string& text : texts) text = task.read_input(text);
  const std::vector<Translation> translations = translate(translator, texts, 1000, o.beam);
  const bool transformer = translator.config.model == "transformer";
  for (size_t k = 0; k < translations.size(); ++k) {
    const Translation& t = translations[k];
    const std::optional<TransformerMaps> maps =
        transformer && (o.json || !o.heatmap.empty())
            ? std::optional<TransformerMaps>(transformer_maps(translator, t))
            : std::nullopt;
    if (o.json) {
      std::cout << translation_json(t, maps ? &*maps : nullptr) << '\n';
    } else {
      std::cout << t.input << "  ->  " << t.output
                << (t.output_tokens.empty() || t.output_tokens.back() != "<eos>"
                        ? "   (no <eos> within the model's length)"
                        : "")
                << "\n"
                << alignment_table(t) << "\n";
      for (size_t i = 0; i < t.beam.size(); ++i)  // beam search: every candidate
        std::printf("  beam %zu: %-30s score %.4f  log P %.4f%s\n", i + 1, t.beam[i].output.c_str(),
                    t.beam[i].score, t.beam[i].log_prob, t.beam[i].finished ? "" : "  (no <eos>)");
      if (!t.beam.empty()) std::printf("\n");
    }
    if (!o.heatmap.empty()) {
      const std::string path = with_index(o.heatmap, k, translations.size());
      alignment_heatmap(t, path);
      if (maps)
        for (const std::string& written : transformer_heatmaps(t, *maps, path))
          std::fprintf(stderr, "wrote %s\n", written.c_str());
    }
  }
}

int64_t answer_lines(Translator translator, const Options& o, AnswerFigures& figures) {
  Pronouncer pronouncer(std::move(translator));
  for (const std::string& path : o.lexicons) pronouncer.add_lexicon(path);
  // The command line's texts must all be readable; a list's bad lines are
  // reported and skipped.
  std::vector<ListedWord> inputs;
  if (o.answers_as_lines())
    for (const std::string& text : o.predict) {
      if (const std::optional<std::string> why = pronouncer.problem(pronouncer.read(text)))
        throw Error(*why);
      inputs.push_back({0, text});
    }
  const size_t typed = inputs.size();
  const std::vector<ListedWord> lines =
      o.predict_file.empty() ? std::vector<ListedWord>{} : read_words(o.predict_file);
  for (const ListedWord& line : lines) {
    if (const std::optional<std::string> why = pronouncer.problem(pronouncer.read(line.text)))
      std::fprintf(stderr, "attograd-translate: %s:%lld: %s; skipped\n", o.predict_file.c_str(),
                   static_cast<long long>(line.line), why->c_str());
    else
      inputs.push_back(line);
  }
  std::vector<std::string> texts;
  for (const ListedWord& input : inputs) texts.push_back(input.text);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Pronunciation> answers =
      texts.empty() ? std::vector<Pronunciation>{}
                    : pronouncer.pronounce(texts, {.nbest = std::max<int64_t>(o.nbest, 1),
                                                   .beam = o.beam,
                                                   .pmass = o.pmass.value_or(1.0)});
  figures.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  figures.inputs = static_cast<int64_t>(answers.size());
  figures.skipped = static_cast<int64_t>(lines.size() - (inputs.size() - typed));
  for (size_t k = 0; k < answers.size(); ++k) {
    const Pronunciation& p = answers[k];
    figures.from_lexicon += p.source == PronunciationSource::Lexicon;
    std::cout << (o.json ? pronunciation_json(texts[k], p) + '\n'
                         : pronunciation_lines(texts[k], p, o.show_source));
    if (o.heatmap.empty()) continue;
    if (p.source == PronunciationSource::Lexicon)
      std::fprintf(stderr, "attograd-translate: %s is the lexicon's: no alignment to draw\n",
                   texts[k].c_str());
    else
      alignment_heatmap(drawn(p, p.variants[0]), with_index(o.heatmap, k, answers.size()));
  }
  if (figures.skipped > 0)
    std::fprintf(stderr, "attograd-translate: %lld of %zu words skipped\n",
                 static_cast<long long>(figures.skipped), lines.size());
  return figures.skipped;
}

}  // namespace ag::translate::program
