// Fuzz target for the dictionary reader of attograd-translate --task g2p
// (translate::parse_cmudict, the body of read_cmudict): any bytes are a
// dictionary file. It must either read or raise ag::Error; a crash, a
// sanitizer report, another exception, or a dictionary that breaks the
// reader's promises (every kept word matches ^[a-z']+$ and has at least one
// pronunciation, no pronunciation twice, the counts add up) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

#include "attograd/error.h"
#include "attograd/translate/cmudict.h"

namespace {

namespace tr = ag::translate;

bool is_word(const std::string& word) {
  if (word.empty()) return false;
  for (const char c : word)
    if (!((c >= 'a' && c <= 'z') || c == '\'')) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const tr::Cmudict dict = tr::parse_cmudict(in, "fuzz.dict");
    int64_t pronunciations = 0;
    for (const tr::CmudictEntry& entry : dict.entries) {
      if (!is_word(entry.word) || entry.pronunciations.empty()) std::abort();
      const std::set<std::string> distinct(entry.pronunciations.begin(),
                                           entry.pronunciations.end());
      if (distinct.size() != entry.pronunciations.size()) std::abort();
      pronunciations += static_cast<int64_t>(entry.pronunciations.size());
    }
    if (pronunciations != dict.stats.pronunciations || dict.entries.empty()) std::abort();
  } catch (const ag::Error&) {
  }
  return 0;
}
