// The pronounce scene's word side (see scene_pronounce.h): finding the
// shipped files, checking a typed word, ARPAbet to IPA, marking the phonemes
// two pronunciations differ in, and CMUdict by word.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "scene_pronounce.h"

namespace ag::viewer {

namespace tr = ag::translate;

std::string find_source_file(const std::string& relative) {
  std::error_code error;
  if (std::filesystem::exists(relative, error)) return relative;
#ifdef ATTOGRAD_SOURCE_DIR
  // A viewer run from its build folder (or anywhere) still finds the file
  // in the tree it was built from.
  const std::filesystem::path in_source = std::filesystem::path(ATTOGRAD_SOURCE_DIR) / relative;
  if (std::filesystem::exists(in_source, error)) return in_source.string();
#endif
  return relative;
}

std::string checked_word(const std::string& typed, int64_t max_letters) {
  if (typed.empty()) throw Error("pronounce: type a word (letters, and apostrophes as in don't)");
  std::string word;
  for (const char c : typed) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte >= 'A' && byte <= 'Z') {
      word += static_cast<char>(byte - 'A' + 'a');
    } else if ((byte >= 'a' && byte <= 'z') || byte == '\'') {
      word += c;
    } else {
      char what[64];
      if (byte >= 0x20 && byte < 0x7f) {
        std::snprintf(what, sizeof what, "'%c'", c);
      } else {
        std::snprintf(what, sizeof what, "the byte 0x%02X", byte);
      }
      throw Error(std::string("pronounce: ") + what +
                  " is not a letter: a word takes the letters a to z and apostrophes only");
    }
  }
  if (static_cast<int64_t>(word.size()) > max_letters) {
    throw Error("pronounce: " + std::to_string(word.size()) +
                " letters is too long: the model reads words of at most " +
                std::to_string(max_letters));
  }
  return word;
}

std::string arpabet_to_ipa(const std::vector<std::string>& phonemes) {
  // CMUdict's 39 phonemes without stress, as Wikipedia's ARPABET table gives
  // them in General American (AH is the stressed vowel of "but"; unstressed
  // it would be a schwa, which the dictionary without stress cannot tell).
  static const std::map<std::string, std::string> kIpa = {
      {"AA", "ɑ"},  {"AE", "æ"}, {"AH", "ʌ"}, {"AO", "ɔ"},  {"AW", "aʊ"}, {"AY", "aɪ"}, {"B", "b"},
      {"CH", "tʃ"}, {"D", "d"},  {"DH", "ð"}, {"EH", "ɛ"},  {"ER", "ɝ"},  {"EY", "eɪ"}, {"F", "f"},
      {"G", "ɡ"},   {"HH", "h"}, {"IH", "ɪ"}, {"IY", "i"},  {"JH", "dʒ"}, {"K", "k"},   {"L", "l"},
      {"M", "m"},   {"N", "n"},  {"NG", "ŋ"}, {"OW", "oʊ"}, {"OY", "ɔɪ"}, {"P", "p"},   {"R", "ɹ"},
      {"S", "s"},   {"SH", "ʃ"}, {"T", "t"},  {"TH", "θ"},  {"UH", "ʊ"},  {"UW", "u"},  {"V", "v"},
      {"W", "w"},   {"Y", "j"},  {"Z", "z"},  {"ZH", "ʒ"}};
  std::string ipa;
  for (const std::string& phoneme : phonemes) {
    const auto found = kIpa.find(phoneme);
    ipa += found != kIpa.end() ? found->second : "[" + phoneme + "]";
  }
  return ipa;
}

PhonemeDiff diff_phonemes(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  // Levenshtein's table, then one path back through it: a diagonal step
  // between equal tokens matches them; every other step marks a token.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
  }
  PhonemeDiff diff{std::vector<bool>(n, false), std::vector<bool>(m, false)};
  size_t i = n, j = m;
  while (i > 0 || j > 0) {
    if (i > 0 && j > 0 && d[i][j] == d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)) {
      if (a[i - 1] != b[j - 1]) diff.a_differs[i - 1] = diff.b_differs[j - 1] = true;
      --i;
      --j;
    } else if (i > 0 && d[i][j] == d[i - 1][j] + 1) {
      diff.a_differs[--i] = true;
    } else {
      diff.b_differs[--j] = true;
    }
  }
  return diff;
}

PronouncingDictionary load_pronouncing_dictionary(const std::string& path) {
  const tr::Cmudict cmudict = tr::read_cmudict(path);
  PronouncingDictionary dict;
  dict.words.reserve(cmudict.entries.size());
  for (const tr::CmudictEntry& entry : cmudict.entries) {
    dict.words.emplace(entry.word, entry.pronunciations);
    if (tr::cmudict_split(entry.word) == tr::Split::Test) dict.test_words.push_back(entry.word);
  }
  return dict;
}

const char* split_name(tr::Split split) {
  switch (split) {
    case tr::Split::Train:
      return "training";
    case tr::Split::Dev:
      return "dev";
    case tr::Split::Test:
      return "test";
  }
  return "?";
}

}  // namespace ag::viewer
