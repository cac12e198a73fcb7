// CMUdict, the CMU Pronouncing Dictionary, as Debian's pocketsphinx-en-us
// ships it (ARPAbet without stress, 39 phonemes): read, split by word, made
// into the g2p task's examples (letters to sounds; its entry is g2p.cpp) and
// scored as G2P papers score it. No task of its own: the tasks that read a
// dictionary use it.
//
//   knife    -> N AY F
//   colonel  -> K ER N AH L
//   read     -> R EH D  or  R IY D   (read(2): an alternate pronunciation)
//
// The format, line by line:
//   ;;; a comment                     (skipped, as are blank lines)
//   word PH PH ...                    one pronunciation of `word`
//   word(2) PH PH ...                 another pronunciation of `word`
//   word PH PH ... # a note           (from '#' on, a comment)
// Words fold to lower case and are kept when they match ^[a-z']+$ once
// "(N)" is stripped ("a.m.", "able-bodied" are skipped and counted).
// Phonemes are uppercase letters; a stress digit 0, 1 or 2 after one is
// dropped and counted ("AH0" reads as "AH"). So Debian's file, upstream's
// cmudict-0.7b (KNIFE  N AY1 F) and cmudict.dict (knife N AY1 F) all read
// alike, as a user's lexicon in any of them does. Spaces and tabs separate
// fields, any number of them; a CRLF line end reads as LF. A pronunciation
// listed twice for the same word is skipped and counted. Anything else that
// is not a dictionary (binary, not UTF-8, a line without phonemes, a phoneme
// with other characters, a line over kMaxCmudictLine bytes, no entry at all)
// is an ag::Error naming the file and line.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "attograd/translate/evaluation.h"
#include "attograd/translate/task.h"

namespace ag::translate {

inline constexpr const char* kDefaultCmudictPath =
    "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict";
// Longer lines are refused rather than read: the longest real entry has under
// 100 bytes, and a line of megabytes is a file of another kind.
inline constexpr int64_t kMaxCmudictLine = 4096;

struct CmudictEntry {
  std::string word;
  // Each pronunciation as phonemes joined by single spaces ("N AY F"), in
  // the file's order, without repeats.
  std::vector<std::string> pronunciations;
};

struct CmudictStats {
  int64_t lines = 0;                  // every line of the file
  int64_t comments = 0;               // ";;;" comments and blank lines
  int64_t skipped_word = 0;           // the word does not match ^[a-z']+$
  int64_t skipped_duplicate = 0;      // a pronunciation the word already had
  int64_t stress_marks = 0;           // stress digits dropped from phonemes
  int64_t pronunciations = 0;         // kept (sum of the entries' pronunciations)
  int64_t longest_word = 0;           // characters
  int64_t longest_pronunciation = 0;  // phonemes
};

struct Cmudict {
  std::vector<CmudictEntry> entries;  // one per word, in order of first appearance
  CmudictStats stats;
};

// Reads a dictionary in CMUdict's format (above). Throws ag::Error: a missing
// file (naming the path and the Debian package), an empty one or one without
// a usable entry, and the malformed lines above (file:line and what is wrong).
Cmudict read_cmudict(const std::string& path);
// The same from a stream (read as bytes), `path` naming it in messages (the
// fuzz target fuzz/fuzz_cmudict.cpp feeds it arbitrary bytes).
Cmudict parse_cmudict(std::istream& in, const std::string& path);

// One line for the log: what was read, kept and skipped, and why.
std::string cmudict_summary(const std::string& path, const Cmudict& dict);

// The split of G2P benchmarks, by word so that no word is in two splits:
// crc32 (zlib) of the word's UTF-8 bytes mod 20 is 0 -> test, 1 -> dev, else
// train (about 5%, 5%, 90%). Any program with a crc32 reproduces it.
enum class Split { Train, Dev, Test };
Split cmudict_split(const std::string& word);

// The g2p TaskData from the dictionary at `path`: every pronunciation of a
// training word is a training example; a dev or test word is one example
// whose target is its first pronunciation and whose alternatives are the
// others (all are right answers). The lengths are the longest word and the
// longest pronunciation over the whole dictionary (so that every dev and test
// word fits), with no headroom: the encoder runs over every padded step, and
// a step more costs every training batch. The description counts what was
// read, skipped and split.
TaskData cmudict_data(const std::string& path);

// Every entry as one example (target: the first pronunciation; alternatives:
// the others), the way --evaluate scores a dictionary.
std::vector<Example> cmudict_examples(const Cmudict& dict);

// A word as a user types it, read as the dictionary's: spaces, tabs, CR and
// LF around it dropped, A-Z folded to a-z ("  Knife\r" -> "knife").
std::string normalize_word(const std::string& word);

// ---- scoring -----------------------------------------------------------------------
// How G2P papers score a test set, with alternates as right answers. For word
// i with output o_i and pronunciations P_i (Example::answers(), as phonemes):
//   d_i  = min over p in P_i of edit_distance(o_i, p); p_i the nearest p (the
//          first in P_i among equals) and |p_i| its length in phonemes
//          (nearest_answers, evaluation.h)
//   WER  = #{i : d_i > 0} / N          a word is right when o_i is any p in P_i
//   PER  = sum_i d_i / sum_i |p_i|     phoneme errors per reference phoneme
using PronunciationScore = NearestAnswer;  // d_i, p_i's index in answers(), |p_i|
struct PronunciationScores {
  int64_t words = 0, wrong_words = 0;
  int64_t edits = 0, reference_phonemes = 0;  // sum_i d_i, sum_i |p_i|
  double wer = 0, per = 0;
  std::vector<PronunciationScore> per_word;
};
// REQUIRES: outputs.size() == examples.size() > 0 (ag::Error otherwise);
// outputs and answers are phonemes joined by spaces.
PronunciationScores score_pronunciations(const std::vector<std::string>& outputs,
                                         const std::vector<Example>& examples);
// The same of outputs already scored (score_outputs, phonemes as targets).
PronunciationScores pronunciation_scores(const Evaluation& scored);

}  // namespace ag::translate
