// Scoring a translator's outputs (d2l's "Sequence to Sequence Learning"
// scores with BLEU; attograd adds exact match and each output's edits to its
// nearest right answer), for any task. A task's own figures (g2p's WER, the
// dates' alignment, ...) are made from these by its entry in the task table
// (tasks.h), whose evaluate() runs the translator and scores:
//
//   bleu             d2l's BLEU of one prediction against its label
//   edit_distance    Levenshtein distance over tokens
//   nearest_answers  each output's nearest right answer and the edits to it
//   score_outputs    exact match, BLEU and the nearest answers of outputs
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attograd/translate/predict.h"

namespace ag::translate {

// d2l's bleu: exp(min(0, 1 - len_label / len_pred)) * prod_n p_n^(1/2^n) over
// n = 1..min(k, len_pred), p_n the clipped n-gram precision. 0 for an empty
// prediction. The string form splits on single spaces, as d2l.
double bleu(const std::vector<std::string>& pred, const std::vector<std::string>& label, int k);
double bleu(const std::string& pred, const std::string& label, int k);

// Levenshtein distance: the fewest insertions, deletions and substitutions of
// tokens that turn `a` into `b`.
int64_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b);

// For output o_i and the right answers A_i of example i (Example::answers(),
// tokenized as `target` says):
//   distance  d_i = min over a in A_i of edit_distance(o_i, a)
//   nearest   the index in A_i of the a that reaches d_i (the first among equals)
//   length    that answer's length in tokens
// The output is right when d_i = 0; sum_i d_i / sum_i length is the token
// error rate (g2p's PER: phoneme edits per reference phoneme).
struct NearestAnswer {
  int64_t distance = 0;
  size_t nearest = 0;
  int64_t length = 0;
};
// REQUIRES: outputs.size() == examples.size() > 0 (ag::Error otherwise).
std::vector<NearestAnswer> nearest_answers(const std::vector<std::string>& outputs,
                                           const std::vector<Example>& examples,
                                           Tokenization target);

// One figure of an evaluation, as the program prints it: the summary line
// shows `text`, --stats prints "SPLIT_KEY value" (test_wer, dev_wer,
// eval_wer for key "wer"). An empty key or text leaves it out of that one.
struct Figure {
  std::string key;
  std::string text;
  double value = 0;
};
// "LABEL 12.34%" of a fraction, with " (note)" after it when there is one.
Figure percent_figure(std::string key, const std::string& label, double fraction,
                      const std::string& note = "");

struct Evaluation {
  int64_t count = 0;
  double accuracy = 0;  // the whole output is a right answer (Example::accepts)
  double bleu = 0;      // mean BLEU against the target, k = 4, over the target's tokens
  std::vector<std::string> outputs;    // one per example
  std::vector<NearestAnswer> nearest;  // one per example (nearest_answers)
  // Of nearest: how many are at a distance from every answer, and the sums
  // of the distances and of the answers' lengths.
  int64_t wrong = 0, edits = 0, reference_tokens = 0;
  // The task's figures (tasks.h: Task::figures), in the order the summary
  // line shows them; empty until the task has scored.
  std::vector<Figure> figures;
  // The value of the figure `key`; ag::Error naming the keys there are when
  // there is none.
  double figure(const std::string& key) const;
};

// The outputs scored against the examples: exact match, BLEU, the nearest
// answers, their targets tokenized as `target` says (a task's figures are
// added by its entry: tasks.h's evaluate). REQUIRES: as nearest_answers.
Evaluation score_outputs(const std::vector<Example>& examples, std::vector<std::string> outputs,
                         Tokenization target);

}  // namespace ag::translate
