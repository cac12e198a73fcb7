// Letters to sounds from a program of your own, built against the installed
// attograd (CMakeLists.txt beside this file: find_package(attograd)):
//   pronounce MODEL.npz WORD...      the three best pronunciations of each word
#include <attograd/translate/pronouncer.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.npz WORD...\n", argv[0]);
    return 2;
  }
  try {
    ag::translate::Pronouncer g2p(argv[1]);  // load the model once...
    const std::vector<std::string> words(argv + 2, argv + argc);
    for (const auto& p : g2p.pronounce(words, {.nbest = 3}))  // ...then pronounce many words
      for (const auto& v : p.variants)
        std::printf("%s\t%.4f\t%s\n", p.word.c_str(), v.posterior, v.phonemes.c_str());
  } catch (const ag::Error& e) {  // a word it cannot read, a file that is no model
    std::fprintf(stderr, "pronounce: %s\n", e.what());
    return 2;
  }
  return 0;
}
