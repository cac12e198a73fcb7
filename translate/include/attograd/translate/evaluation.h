// Scoring a translator on examples (d2l's "Sequence to Sequence Learning"
// scores with BLEU; attograd adds exact match and each task's own figures):
//
//   bleu       d2l's BLEU of one prediction against its label
//   evaluate   exact match and mean BLEU for every task, then the task's own
//              figures from its entry in the task table (tasks.h): the dates'
//              alignment (dates.cpp), g2p's WER and PER (cmudict.cpp)
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attograd/translate/cmudict.h"
#include "attograd/translate/predict.h"

namespace ag::translate {

// d2l's bleu: exp(min(0, 1 - len_label / len_pred)) * prod_n p_n^(1/2^n) over
// n = 1..min(k, len_pred), p_n the clipped n-gram precision. 0 for an empty
// prediction. The string form splits on single spaces, as d2l.
double bleu(const std::vector<std::string>& pred, const std::vector<std::string>& label, int k);
double bleu(const std::string& pred, const std::string& label, int k);

struct Evaluation {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t count = 0;
  double accuracy = 0;  // the whole output is a right answer (Example::accepts)
  double bleu = 0;      // mean BLEU against the target, k = 4, over the target's tokens
  // Dates only (NaN otherwise): for each output digit of the year, month and
  // day, the weight its alignment row puts on the source characters that
  // spell that field, averaged over digits and examples; and per field.
  double alignment = kNaN;
  double alignment_field[3] = {kNaN, kNaN, kNaN};  // year, month, day
  std::vector<std::string> outputs;                // one per example
  // g2p only (words == 0 otherwise): WER, PER and each word's edit distance
  // (score_pronunciations, cmudict.h).
  PronunciationScores pronunciation;
};
// The examples' outputs by translate() (greedy, or beam search with `beam`
// candidates), scored: exact match and BLEU here, the rest by the task's
// entry (TaskSpec::score).
Evaluation evaluate(Translator& translator, const std::vector<Example>& examples,
                    int64_t batch_size = 1000, int64_t beam = 1);

}  // namespace ag::translate
