// How a letters-to-sounds model attends, measured (issue 63's comparison;
// docs/compare/README.md's columns entropy, monotonic, alignment_agreement).
//
// A row is the attention of one output phoneme over the word's columns: its
// letters, then the <eos> the encoder reads after them (the model's
// alignment(): a scoring function's weights, or the Transformer's last
// block's cross-attention averaged over its heads). The row of the step
// that emits <eos> is no phoneme's and is left out.
//
//   entropy     the mean over rows of -sum_j w_j ln w_j (nats; 0 ln 0 = 0):
//               0 when every row puts all its weight on one column, ln(n)
//               when a row spreads evenly over n columns
//   monotonic   over pairs of consecutive rows of one word, the share whose
//               most-weighted column (the first of equal ones) is at or
//               after the previous row's: reading the word left to right
//   agreement   over the phonemes of reference pronunciations, decoded with
//               teacher forcing (the decoder fed the reference, not its own
//               answer, so that every phoneme has its row), the share whose
//               most-weighted column is one of the letters that spell the
//               phoneme in scripts/g2p_align.py's alignment (a weight peak
//               on <eos> or on another letter disagrees)
//
// entropy and monotonic are measured on a model's own answers (greedy or
// beam, Translation::alignment); agreement on the reference's.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attograd/translate/predict.h"

namespace ag::translate {

struct AttentionMeasures {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t rows = 0;         // phoneme rows measured
  double entropy = kNaN;    // nats; NaN without rows
  int64_t pairs = 0;        // consecutive row pairs
  double monotonic = kNaN;  // 0 to 1; NaN without pairs
};

// entropy and monotonic over the translations' alignments (rows: the output
// tokens but a final <eos>).
AttentionMeasures attention_measures(const std::vector<Translation>& translations);

// One line of scripts/g2p_align.py's TSV: a pronunciation and, for each
// phoneme, the 0-based indices of the letters that spell it.
struct AlignedPronunciation {
  std::string word;
  std::vector<std::string> phonemes;
  std::vector<std::vector<int64_t>> letters;  // one group per phoneme
};

struct AlignmentReference {
  std::vector<AlignedPronunciation> pronunciations;  // in the file's order
  int64_t unaligned = 0;  // lines with an empty third column (no alignment fits), skipped
};

// Reads g2p_align.py's TSV: "word<TAB>phonemes<TAB>groups" (phonemes and
// groups space-separated, a group's indices joined by '+'; a CR before the
// line end is dropped). ag::Error naming file:line for a line that is not
// that: not three columns, no phonemes, a group count that is not the
// phoneme count, an index that is not a letter of the word; and for a file
// that cannot be read or has no aligned line.
AlignmentReference read_alignment_reference(const std::string& path);

struct AlignmentAgreement {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t pronunciations = 0;  // teacher-forced
  int64_t phonemes = 0;        // rows scored
  int64_t agreeing = 0;        // rows whose peak is a letter of the phoneme
  double agreement = kNaN;     // agreeing / phonemes; NaN without phonemes
  // The reference's pronunciations of `words` the model cannot take: a
  // character or phoneme its vocabularies lack, or too long for its steps.
  int64_t skipped = 0;
};

// The agreement of `translator` (a g2p model) with the reference, on every
// reference pronunciation of a word in `words` (the evaluated dictionary's;
// the reference may cover more), in batches of batch_size. Eval mode inside;
// the model's training mode is restored. ag::Error when the model is not a
// g2p model.
AlignmentAgreement alignment_agreement(Translator& translator, const AlignmentReference& reference,
                                       const std::vector<std::string>& words,
                                       int64_t batch_size = 1000);

}  // namespace ag::translate
