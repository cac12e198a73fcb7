// Scoring outputs: BLEU, edit distances, exact match (see evaluation.h).
#include "attograd/translate/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>

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

int64_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  // row[j] = distance(a[0, i), b[0, j)), one row of the (|a|+1) x (|b|+1) table at a time.
  std::vector<int64_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];  // distance(a[0, i-1), b[0, j-1))
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<NearestAnswer> nearest_answers(const std::vector<std::string>& outputs,
                                           const std::vector<Example>& examples,
                                           Tokenization target) {
  AG_CHECK(!examples.empty() && outputs.size() == examples.size(), "nearest_answers",
           "need one output per example and at least one, got " + std::to_string(outputs.size()) +
               " outputs and " + std::to_string(examples.size()) + " examples");
  std::vector<NearestAnswer> out;
  out.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    const std::vector<std::string> output = tokenize(outputs[i], target);
    const std::vector<std::string> answers = examples[i].answers();
    NearestAnswer best;
    for (size_t k = 0; k < answers.size(); ++k) {
      const std::vector<std::string> reference = tokenize(answers[k], target);
      const int64_t distance = edit_distance(output, reference);
      if (k == 0 || distance < best.distance)
        best = {distance, k, static_cast<int64_t>(reference.size())};
    }
    out.push_back(best);
  }
  return out;
}

Figure percent_figure(std::string key, const std::string& label, double fraction,
                      const std::string& note) {
  char number[32];
  std::snprintf(number, sizeof number, " %.2f%%", 100 * fraction);
  return {std::move(key), label + number + (note.empty() ? "" : " (" + note + ")"), fraction};
}

double Evaluation::figure(const std::string& key) const {
  std::string keys;
  for (const Figure& f : figures) {
    if (f.key == key) return f.value;
    if (!f.key.empty()) keys += (keys.empty() ? "" : ", ") + f.key;
  }
  throw Error("Evaluation::figure: no figure '" + key +
              "' (the task's figures: " + (keys.empty() ? "none" : keys) + ")");
}

Evaluation score_outputs(const std::vector<Example>& examples, std::vector<std::string> outputs,
                         Tokenization target) {
  Evaluation result;
  result.nearest = nearest_answers(outputs, examples, target);
  result.count = static_cast<int64_t>(examples.size());
  int64_t correct = 0;
  double bleu_sum = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const Example& e = examples[i];
    correct += e.accepts(outputs[i]);
    bleu_sum += bleu(tokenize(outputs[i], target), tokenize(e.target, target), 4);
    result.wrong += result.nearest[i].distance > 0;
    result.edits += result.nearest[i].distance;
    result.reference_tokens += result.nearest[i].length;
  }
  result.accuracy = static_cast<double>(correct) / static_cast<double>(result.count);
  result.bleu = bleu_sum / static_cast<double>(result.count);
  result.outputs = std::move(outputs);
  return result;
}

}  // namespace ag::translate
