// A deterministic stand-in for libFuzzer's main(), linked with one fuzz
// target (fuzz/CMakeLists.txt), so that every target runs in CI with any
// compiler: GCC has no libFuzzer, and a test that skips itself where clang is
// missing would let a target rot unnoticed.
//
//   fuzz_<name>_driver CORPUS_DIR RUNS [SEED]
//
// It feeds LLVMFuzzerTestOneInput every seed file of CORPUS_DIR as it is,
// then RUNS inputs each made from one seed by 1 to 4 byte mutations (bit
// flips, interesting bytes, inserts, deletes, copied ranges, digit runs,
// splices with another seed). Its own generator (splitmix64) makes the same
// inputs on every machine for a given SEED (default 1). Not coverage-guided:
// it finds what lies a few mutations from the seeds, which under ASan + UBSan
// is where most parser bugs are; the libFuzzer build is for long searches.
//
// A failure is an exception the target lets out (it catches ag::Error
// itself) or a sanitizer report: either way the input is written to
// fuzz-failure-<run>.bin in the working directory, so that it can be replayed
// by the libFuzzer build or a debugger, and the driver fails.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// GCC says ASan is on with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define ATTOGRAD_FUZZ_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTOGRAD_FUZZ_SANITIZED 1
#endif
#endif
#ifdef ATTOGRAD_FUZZ_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

// Mutated inputs stop growing here, as libFuzzer's -max_len 4096 does.
constexpr size_t kMaxLen = 4096;

// splitmix64: a few lines, and the same numbers everywhere (the standard
// distributions' output is left to each library).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform enough in [0, n) for n far below 2^64. REQUIRES: n > 0.
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t state_;
};

// Bytes parsers treat specially: zero, sign and top bits, the ends of the
// printable range, separators of the text formats fuzzed.
constexpr uint8_t kInteresting[] = {0,   1,   0x7f, 0x80, 0xff, '\n', '\t', ' ', '\'',
                                    '"', ',', '(',  ')',  '{',  '}',  ':',  '0', '9'};

void mutate(Bytes& input, const std::vector<Bytes>& seeds, Rng& rng) {
  const size_t pos = input.empty() ? 0 : rng.below(input.size());
  switch (rng.below(7)) {
    case 0:  // flip one bit
      if (!input.empty()) input[pos] ^= static_cast<uint8_t>(1u << rng.below(8));
      break;
    case 1:  // an interesting byte over one
      if (!input.empty()) input[pos] = kInteresting[rng.below(sizeof kInteresting)];
      break;
    case 2: {  // insert 1 to 8 random bytes
      const size_t count = 1 + rng.below(8);
      for (size_t i = 0; i < count; ++i)
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(pos),
                     static_cast<uint8_t>(rng.next()));
      break;
    }
    case 3: {  // delete 1 to 16 bytes
      const size_t count = std::min(input.size() - pos, 1 + rng.below(16));
      input.erase(input.begin() + static_cast<std::ptrdiff_t>(pos),
                  input.begin() + static_cast<std::ptrdiff_t>(pos + count));
      break;
    }
    case 4: {  // copy a range of the input over another place in it (they may overlap)
      if (input.empty()) break;
      const size_t from = rng.below(input.size());
      const size_t count = std::min(input.size() - std::max(from, pos), 1 + rng.below(32));
      const Bytes range(input.begin() + static_cast<std::ptrdiff_t>(from),
                        input.begin() + static_cast<std::ptrdiff_t>(from + count));
      std::copy(range.begin(), range.end(), input.begin() + static_cast<std::ptrdiff_t>(pos));
      break;
    }
    case 5: {  // a run of 1 to 24 digits: huge sizes, counts and lengths
      const size_t count = 1 + rng.below(24);
      for (size_t i = 0; i < count; ++i)
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(pos),
                     static_cast<uint8_t>('0' + rng.below(10)));
      break;
    }
    default: {  // splice: this input's head, another seed's tail
      const Bytes& other = seeds[rng.below(seeds.size())];
      const size_t tail = other.empty() ? 0 : rng.below(other.size());
      input.resize(pos);
      input.insert(input.end(), other.begin() + static_cast<std::ptrdiff_t>(tail), other.end());
      break;
    }
  }
  if (input.size() > kMaxLen) input.resize(kMaxLen);
}

// The input under way, written out when a sanitizer reports on it.
const Bytes* g_current = nullptr;
long g_run = -1;  // -1 .. -n: the seeds; 0 ..: the mutated inputs

void write_current() {
  if (g_current == nullptr) return;
  const std::string path = "fuzz-failure-" + std::to_string(g_run) + ".bin";
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(g_current->data()),
            static_cast<std::streamsize>(g_current->size()));
  std::fprintf(stderr, "fuzz driver: input %ld (%zu bytes) written to %s\n", g_run,
               g_current->size(), path.c_str());
}

// Runs the target on a copy allocated to the input's exact size, so that
// ASan sees a read one past its end.
void run(const Bytes& input) {
  g_current = &input;
  const std::vector<uint8_t> exact(input.begin(), input.end());
  try {
    LLVMFuzzerTestOneInput(exact.data(), exact.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz driver: the target let out an exception: %s\n", e.what());
    write_current();
    std::exit(1);
  }
}

std::vector<Bytes> read_corpus(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());  // the directory's order is the file system's
  std::vector<Bytes> seeds;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return seeds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR RUNS [SEED]\n", argv[0]);
    return 2;
  }
  const std::vector<Bytes> seeds = read_corpus(argv[1]);
  const long runs = std::atol(argv[2]);
  if (seeds.empty() || runs < 0) {
    std::fprintf(stderr, "fuzz driver: no seed files in %s, or RUNS < 0\n", argv[1]);
    return 2;
  }
  Rng rng(argc == 4 ? std::strtoull(argv[3], nullptr, 10) : 1);
#ifdef ATTOGRAD_FUZZ_SANITIZED
  __sanitizer_set_death_callback(write_current);
#endif

  for (size_t i = 0; i < seeds.size(); ++i) {
    g_run = -1 - static_cast<long>(i);
    run(seeds[i]);
  }
  size_t longest = 0;
  for (g_run = 0; g_run < runs; ++g_run) {
    Bytes input = seeds[rng.below(seeds.size())];
    for (size_t m = 1 + rng.below(4); m > 0; --m) mutate(input, seeds, rng);
    longest = std::max(longest, input.size());
    run(input);
  }
  std::printf("%s: %zu seeds and %ld mutated inputs (up to %zu bytes), no failure\n", argv[0],
              seeds.size(), runs, longest);
  return 0;
}
