// CMUdict: the reader, the split by word, the g2p examples and the scorer
// (see cmudict.h).
#include "attograd/translate/cmudict.h"

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "attograd/error.h"

namespace ag::translate {

namespace {

// Whether bytes [0, size) are well-formed UTF-8: each sequence is a lead
// byte and the continuation bytes (10xxxxxx) it announces, with no overlong
// form, surrogate or code point above U+10FFFF (RFC 3629's table).
bool is_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    size_t length = 0;
    unsigned char low = 0x80, high = 0xbf;  // the second byte's range
    if (c < 0x80) {
      length = 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
      length = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3;
      if (c == 0xe0) low = 0xa0;   // overlong
      if (c == 0xed) high = 0x9f;  // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4;
      if (c == 0xf0) low = 0x90;   // overlong
      if (c == 0xf4) high = 0x8f;  // above U+10FFFF
    } else {
      return false;
    }
    if (i + length > n) return false;
    for (size_t k = 1; k < length; ++k) {
      const unsigned char lo = k == 1 ? low : 0x80, hi = k == 1 ? high : 0xbf;
      if (s[i + k] < lo || s[i + k] > hi) return false;
    }
    i += length;
  }
  return true;
}

bool is_kept_word(const std::string& word) {
  return !word.empty() && std::all_of(word.begin(), word.end(),
                                      [](char c) { return (c >= 'a' && c <= 'z') || c == '\''; });
}

bool is_phoneme(const std::string& token) {
  return !token.empty() &&
         std::all_of(token.begin(), token.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

// "AY1" -> "AY": upstream CMUdict marks a vowel's stress with 0, 1 or 2,
// which the model does not predict (Debian's file has none).
bool drop_stress(std::string& phoneme) {
  if (phoneme.size() < 2 || phoneme.back() < '0' || phoneme.back() > '2') return false;
  phoneme.pop_back();
  return true;
}

// "word(2)" -> "word"; anything else as it is ("word(x)" fails the word test later).
std::string strip_alternate(const std::string& word) {
  const size_t open = word.rfind('(');
  if (open == std::string::npos || open == 0 || word.back() != ')' || open + 2 >= word.size())
    return word;
  const bool number = std::all_of(word.begin() + static_cast<int64_t>(open) + 1, word.end() - 1,
                                  [](char c) { return c >= '0' && c <= '9'; });
  return number ? word.substr(0, open) : word;
}

}  // namespace

Cmudict read_cmudict(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("read_cmudict: cannot open '" + path +
                "': CMUdict is in Debian's package pocketsphinx-en-us (apt-get install "
                "pocketsphinx-en-us), or give another dictionary with --dict PATH");
  return parse_cmudict(in, path);
}

Cmudict parse_cmudict(std::istream& in, const std::string& path) {
  Cmudict dict;
  CmudictStats& stats = dict.stats;
  std::map<std::string, size_t> entry_of;  // word -> its index in dict.entries
  const auto fail = [&](const std::string& what) {
    throw Error("read_cmudict: " + path + ":" + std::to_string(stats.lines) + ": " + what);
  };
  std::streambuf& bytes = *in.rdbuf();
  using Traits = std::char_traits<char>;
  std::string line;
  for (;;) {
    // One line, read byte by byte so that a huge or binary "line" stops
    // the reading at once instead of being held whole.
    line.clear();
    Traits::int_type c = bytes.sbumpc();
    if (Traits::eq_int_type(c, Traits::eof())) break;
    ++stats.lines;
    for (; !Traits::eq_int_type(c, Traits::eof()) && c != '\n'; c = bytes.sbumpc()) {
      if (c == 0) fail("a NUL byte: a binary file, not a dictionary");
      if (static_cast<int64_t>(line.size()) == kMaxCmudictLine)
        fail("a line of more than " + std::to_string(kMaxCmudictLine) + " bytes: not a dictionary");
      line.push_back(Traits::to_char_type(c));
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!is_utf8(line)) fail("not UTF-8 text");
    if (const size_t note = line.find('#'); note != std::string::npos) line.resize(note);
    std::replace(line.begin(), line.end(), '\t', ' ');
    const std::vector<std::string> fields = tokenize(line, Tokenization::Phonemes);
    if (fields.empty() || fields[0].rfind(";;;", 0) == 0) {
      ++stats.comments;
      continue;
    }
    if (fields.size() == 1) fail("'" + fields[0] + "' has no phonemes");
    std::string pronunciation;
    for (size_t i = 1; i < fields.size(); ++i) {
      std::string phoneme = fields[i];
      if (drop_stress(phoneme)) ++stats.stress_marks;
      if (!is_phoneme(phoneme))
        fail("phoneme '" + fields[i] +
             "' is not an ARPAbet symbol: uppercase letters, then a stress digit 0, 1 or 2 or "
             "nothing");
      pronunciation += (i > 1 ? " " : "") + phoneme;
    }
    // "KNIFE" -> "knife": upstream's cmudict-0.7b writes its words in capitals.
    const std::string word = strip_alternate(fold_ascii_case(fields[0]));
    if (!is_kept_word(word)) {
      ++stats.skipped_word;
      continue;
    }
    const auto [it, added] = entry_of.emplace(word, dict.entries.size());
    if (added) dict.entries.push_back({word, {}});
    std::vector<std::string>& pronunciations = dict.entries[it->second].pronunciations;
    if (std::find(pronunciations.begin(), pronunciations.end(), pronunciation) !=
        pronunciations.end()) {
      ++stats.skipped_duplicate;
      continue;
    }
    pronunciations.push_back(pronunciation);
    ++stats.pronunciations;
    stats.longest_word = std::max(stats.longest_word, static_cast<int64_t>(word.size()));
    stats.longest_pronunciation =
        std::max(stats.longest_pronunciation, static_cast<int64_t>(fields.size() - 1));
  }
  if (in.bad()) throw Error("read_cmudict: " + path + ": read error");
  AG_CHECK(stats.lines > 0, "read_cmudict", path + ": an empty file, not a dictionary");
  AG_CHECK(!dict.entries.empty(), "read_cmudict",
           path + ": no usable entry in " + std::to_string(stats.lines) + " lines (" +
               std::to_string(stats.skipped_word) +
               " skipped: their word is not ^[a-z']+$; the rest comments or blank)");
  return dict;
}

std::string cmudict_summary(const std::string& path, const Cmudict& dict) {
  const CmudictStats& s = dict.stats;
  const auto n = [](auto value) { return std::to_string(value); };
  return "CMUdict " + path + ": " + n(s.lines) + " lines, " + n(dict.entries.size()) +
         " words with " + n(s.pronunciations) + " pronunciations kept; skipped " +
         n(s.skipped_word) + " lines whose word is not ^[a-z']+$, " + n(s.skipped_duplicate) +
         " repeated pronunciations, " + n(s.comments) + " comments or blank lines" +
         (s.stress_marks > 0 ? "; dropped " + n(s.stress_marks) + " stress digits" : "");
}

Split cmudict_split(const std::string& word) {
  const uLong crc =
      crc32_z(0, reinterpret_cast<const Bytef*>(word.data()), static_cast<z_size_t>(word.size()));
  switch (crc % 20) {
    case 0:
      return Split::Test;
    case 1:
      return Split::Dev;
    default:
      return Split::Train;
  }
}

namespace {

Example entry_example(const CmudictEntry& entry) {
  Example e;
  e.source = entry.word;
  e.target = entry.pronunciations.front();
  e.alternatives.assign(entry.pronunciations.begin() + 1, entry.pronunciations.end());
  return e;
}

}  // namespace

std::vector<Example> cmudict_examples(const Cmudict& dict) {
  std::vector<Example> examples;
  examples.reserve(dict.entries.size());
  for (const CmudictEntry& entry : dict.entries) examples.push_back(entry_example(entry));
  return examples;
}

TaskData cmudict_data(const std::string& path) {
  const Cmudict dict = read_cmudict(path);
  TaskData data;
  int64_t train_words = 0;
  for (const CmudictEntry& entry : dict.entries) {
    switch (cmudict_split(entry.word)) {
      case Split::Train:
        ++train_words;
        for (const std::string& pronunciation : entry.pronunciations) {
          Example e;
          e.source = entry.word;
          e.target = pronunciation;
          data.train.push_back(std::move(e));
        }
        break;
      case Split::Dev:
        data.dev.push_back(entry_example(entry));
        break;
      case Split::Test:
        data.test.push_back(entry_example(entry));
        break;
    }
  }
  AG_CHECK(!data.train.empty(), "cmudict_data",
           path + ": no word falls in the training split (crc32 % 20 >= 2)");
  data.max_source_length = dict.stats.longest_word;
  data.max_target_length = dict.stats.longest_pronunciation;
  const auto n = [](auto value) { return std::to_string(value); };
  data.description = cmudict_summary(path, dict) + "\nsplit by crc32(word) % 20: train " +
                     n(train_words) + " words (" + n(data.train.size()) + " pairs), dev " +
                     n(data.dev.size()) + " words, test " + n(data.test.size()) + " words";
  return data;
}

std::string normalize_word(const std::string& word) {
  const size_t begin = word.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return fold_ascii_case(word.substr(begin, word.find_last_not_of(" \t\r\n") + 1 - begin));
}

// ---- scoring -----------------------------------------------------------------------
PronunciationScores pronunciation_scores(const Evaluation& scored) {
  PronunciationScores scores;
  scores.words = scored.count;
  scores.wrong_words = scored.wrong;
  scores.edits = scored.edits;
  scores.reference_phonemes = scored.reference_tokens;
  scores.wer = static_cast<double>(scores.wrong_words) / static_cast<double>(scores.words);
  scores.per = scores.reference_phonemes > 0 ? static_cast<double>(scores.edits) /
                                                   static_cast<double>(scores.reference_phonemes)
                                             : 0.0;
  scores.per_word = scored.nearest;
  return scores;
}

PronunciationScores score_pronunciations(const std::vector<std::string>& outputs,
                                         const std::vector<Example>& examples) {
  return pronunciation_scores(score_outputs(examples, outputs, Tokenization::Phonemes));
}

}  // namespace ag::translate
