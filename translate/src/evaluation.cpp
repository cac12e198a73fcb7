// Scoring a translator: BLEU, exact match, and the task's own figures (see
// evaluation.h).
#include "attograd/translate/evaluation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "attograd/translate/tasks.h"

namespace ag::translate {

double bleu(const std::vector<std::string>& pred, const std::vector<std::string>& label, int k) {
  AG_CHECK(k >= 1, "bleu", "k " + std::to_string(k) + " < 1");
  const auto len_pred = static_cast<int64_t>(pred.size());
  const auto len_label = static_cast<int64_t>(label.size());
  if (len_pred == 0) return 0.0;
  const auto ngram = [](const std::vector<std::string>& tokens, int64_t start, int64_t n) {
    std::string joined;
    for (int64_t i = start; i < start + n; ++i) {
      if (i > start) joined += ' ';
      joined += tokens[static_cast<size_t>(i)];
    }
    return joined;
  };
  double score = std::exp(std::min(0.0, 1.0 - static_cast<double>(len_label) / len_pred));
  for (int64_t n = 1; n <= std::min<int64_t>(k, len_pred); ++n) {
    std::map<std::string, int64_t> label_subs;
    for (int64_t i = 0; i + n <= len_label; ++i) ++label_subs[ngram(label, i, n)];
    int64_t num_matches = 0;
    for (int64_t i = 0; i + n <= len_pred; ++i) {
      auto it = label_subs.find(ngram(pred, i, n));
      if (it != label_subs.end() && it->second > 0) {
        ++num_matches;
        --it->second;
      }
    }
    score *= std::pow(static_cast<double>(num_matches) / static_cast<double>(len_pred - n + 1),
                      std::pow(0.5, static_cast<double>(n)));
  }
  return score;
}

double bleu(const std::string& pred, const std::string& label, int k) {
  const auto split = [](const std::string& s) {
    std::vector<std::string> tokens;
    std::string token;
    std::istringstream in(s);
    while (std::getline(in, token, ' ')) tokens.push_back(token);
    if (!s.empty() && s.back() == ' ') tokens.emplace_back();
    return tokens;
  };
  return bleu(split(pred), split(label), k);
}

Evaluation evaluate(Translator& translator, const std::vector<Example>& examples,
                    int64_t batch_size, int64_t beam) {
  AG_CHECK(!examples.empty(), "evaluate", "no examples");
  std::vector<std::string> sources;
  sources.reserve(examples.size());
  for (const auto& e : examples) sources.push_back(e.source);
  const std::vector<Translation> translations = translate(translator, sources, batch_size, beam);
  Evaluation result;
  result.count = static_cast<int64_t>(examples.size());
  const Tokenization tokenization = target_tokenization(translator.task);
  int64_t correct = 0;
  double bleu_sum = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const Example& e = examples[i];
    const Translation& t = translations[i];
    correct += e.accepts(t.output);
    bleu_sum += bleu(tokenize(t.output, tokenization), tokenize(e.target, tokenization), 4);
    result.outputs.push_back(t.output);
  }
  result.accuracy = static_cast<double>(correct) / static_cast<double>(result.count);
  result.bleu = bleu_sum / static_cast<double>(result.count);
  // The task's own figures (its file's TaskSpec::score).
  const TaskSpec& spec = task_spec(translator.task);
  if (spec.score) spec.score(examples, translations, result);
  return result;
}

}  // namespace ag::translate
