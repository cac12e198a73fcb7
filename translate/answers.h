// attograd-translate's answers: --predict's tables (each text's output, its
// alignment and its beam; JSON lines with --json) and the answers as lines
// (--predict-file's, and --predict's with --nbest, --pmass, --lexicon or
// --show-source: Sequitur's n-best lines, from a lexicon or the model), with
// --heatmap's pictures in both.
#pragma once

#include <cstdint>

#include "attograd/translate/translator.h"
#include "flags.h"

namespace ag::translate::program {

// The answered inputs, for --stats: how many (from a lexicon and in all),
// how many were skipped, and the seconds pronounce() took (loading and
// reading the list excluded).
struct AnswerFigures {
  int64_t inputs = 0, from_lexicon = 0, skipped = 0;
  double seconds = 0;
};

// --predict's texts as tables (or JSON lines), read as the task reads its
// inputs; a text the model cannot read is an ag::Error.
void show_translations(Translator& translator, const Options& o);

// The answers as lines: --predict's texts (when o.answers_as_lines(); one
// the model cannot read is an ag::Error) and --predict-file's lines (one the
// model cannot read is reported with its line number and skipped). Returns
// how many lines were skipped.
int64_t answer_lines(Translator translator, const Options& o, AnswerFigures& figures);

}  // namespace ag::translate::program
