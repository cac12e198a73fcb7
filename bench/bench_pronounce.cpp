// Letters to sounds as a tool: how fast the shipped model loads and
// pronounces a whole dictionary, and a peer in the same run.
//   pronounce/load                  load_translator of translate/models/g2p-cmudict.npz
//   pronounce/greedy/threads:T      Pronouncer::pronounce over every word of
//                                   Debian's CMUdict (124,804), greedy
//   pronounce/beam5/threads:T       the same with a beam of 5
//   pronounce/festival_lts          Festival's CMU letter-to-sound rules
//                                   (festival + festlex-cmu; the rules alone,
//                                   no lexicon lookup) on the first 2,000 of
//                                   the same words (ATTOGRAD_FESTIVAL_WORDS: a
//                                   word takes it tens of milliseconds), one
//                                   festival process, its start-up included
// items_per_second is words per second. A case whose dictionary, model or
// festival is missing is skipped with the reason. ATTOGRAD_PRONOUNCE_WORDS=N
// takes the first N words of a fixed shuffle instead of all (a quick look).
// docs/g2p.md ("A whole dictionary in seconds") has the figures.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "attograd/attograd.h"
#include "attograd/translate/cmudict.h"
#include "attograd/translate/pronouncer.h"

namespace {

using ag::translate::Pronouncer;

const std::string kModel = std::string(ATTOGRAD_SOURCE_DIR) + "/translate/models/g2p-cmudict.npz";

// The count an environment variable sets (at least 1), or `otherwise`.
size_t count_from_env(const char* name, size_t otherwise) {
  const char* value = std::getenv(name);
  return value ? static_cast<size_t>(std::max(1L, std::atol(value))) : otherwise;
}

// Every word of the dictionary, in a fixed shuffled order (the Pronouncer
// sorts them itself), or the first ATTOGRAD_PRONOUNCE_WORDS of them.
const std::vector<std::string>& words() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    if (!std::filesystem::exists(ag::translate::kDefaultCmudictPath)) return out;
    for (const auto& entry :
         ag::translate::read_cmudict(ag::translate::kDefaultCmudictPath).entries)
      out.push_back(entry.word);
    std::shuffle(out.begin(), out.end(), std::mt19937_64(0));
    out.resize(std::min(out.size(), count_from_env("ATTOGRAD_PRONOUNCE_WORDS", out.size())));
    return out;
  }();
  return all;
}

bool ready(benchmark::State& state) {
  if (words().empty()) {
    state.SkipWithError("no dictionary: apt-get install pocketsphinx-en-us");
    return false;
  }
  if (!std::filesystem::exists(kModel)) {
    state.SkipWithError(("no model at " + kModel).c_str());
    return false;
  }
  return true;
}

void BM_Load(benchmark::State& state) {
  if (!std::filesystem::exists(kModel)) return state.SkipWithError("no shipped model");
  for (auto _ : state) benchmark::DoNotOptimize(ag::translate::load_translator(kModel));
}
BENCHMARK(BM_Load)->Name("pronounce/load")->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Pronounce(benchmark::State& state, int64_t beam) {
  if (!ready(state)) return;
  ag::set_num_threads(static_cast<int>(state.range(0)));
  Pronouncer pronouncer(kModel);
  for (auto _ : state) benchmark::DoNotOptimize(pronouncer.pronounce(words(), {.beam = beam}));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(words().size()));
  state.SetLabel(std::to_string(words().size()) + " words");
  ag::set_num_threads(1);
}
BENCHMARK_CAPTURE(BM_Pronounce, greedy, 1)
    ->Name("pronounce/greedy")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Pronounce, beam5, 5)
    ->Name("pronounce/beam5")
    ->ArgName("threads")
    ->Arg(2)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

// Festival reads a Scheme file that applies the CMU lexicon's
// letter-to-sound function (cmu_lts_function: the rules, then its stress
// rules) to every word and prints the result; apostrophes are dropped, as
// the function reads letters only.
void BM_FestivalLts(benchmark::State& state) {
  if (!ready(state)) return;
  if (std::system("command -v festival > /dev/null 2>&1") != 0)
    return state.SkipWithError("no festival: apt-get install festival festlex-cmu");
  const std::string dir =
      std::filesystem::temp_directory_path() / ("attograd_festival_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string script = dir + "/lts.scm", out = dir + "/out.txt";
  const size_t festival_words =
      std::min(words().size(), count_from_env("ATTOGRAD_FESTIVAL_WORDS", 2000));
  {
    std::ofstream scm(script);
    scm << "(lex.select \"cmu\")\n(define (p w) (format t \"%s\\t%l\\n\" w (cmu_lts_function w "
           "nil)))\n";
    for (size_t k = 0; k < festival_words; ++k) {
      std::string w = words()[k];
      w.erase(std::remove(w.begin(), w.end(), '\''), w.end());
      if (!w.empty()) scm << "(p \"" << w << "\")\n";
    }
  }
  const std::string command = "festival --batch " + script + " > " + out + " 2>&1";
  for (auto _ : state)
    if (std::system(command.c_str()) != 0) state.SkipWithError("festival failed");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(festival_words));
  state.SetLabel(std::to_string(festival_words) + " words");
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_FestivalLts)
    ->Name("pronounce/festival_lts")
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
