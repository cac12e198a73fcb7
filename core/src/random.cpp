// The global random generator and the random creation functions (rand,
// uniform, randn).
#include <cmath>
#include <cstring>
#include <locale>
#include <mutex>
#include <random>
#include <sstream>

#include "attograd/tensor.h"
#include "elementwise.h"

namespace ag {

// ---- random -------------------------------------------------------------------------
// One global 64-bit Mersenne Twister. Our own uniform/normal transforms (not
// std::*_distribution, whose output differs between standard libraries) keep
// every draw identical across platforms for a given seed. A thread with a
// ThreadGenerator draws from that instead: no other thread can see it, so it
// needs no lock.

struct ThreadGenerator::Engine {
  std::mt19937_64 generator;
};

namespace {
std::mutex rng_mutex;
std::mt19937_64& global_rng() {
  static std::mt19937_64 generator(0x5eed);
  return generator;
}
thread_local ThreadGenerator::Engine* t_engine = nullptr;  // this thread's, if any
thread_local bool t_skip_draws = false;                    // a SkipDrawsGuard lives

// The generator this thread draws from, and the lock it needs: the global
// one's, or none for a ThreadGenerator's. Draws happen while it lives.
struct Draws {
  std::unique_lock<std::mutex> lock;
  std::mt19937_64& rng;
  Draws()
      : lock(t_engine ? std::unique_lock<std::mutex>() : std::unique_lock<std::mutex>(rng_mutex)),
        rng(t_engine ? t_engine->generator : global_rng()) {}
  double next_uniform() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
};
}  // namespace

ThreadGenerator::ThreadGenerator(uint64_t seed)
    : engine_(std::make_unique<Engine>(Engine{std::mt19937_64(seed)})), previous_(t_engine) {
  t_engine = engine_.get();
}

ThreadGenerator::~ThreadGenerator() {
  t_engine = previous_;
}

SkipDrawsGuard::SkipDrawsGuard() : previous_(t_skip_draws) {
  t_skip_draws = true;
}

SkipDrawsGuard::~SkipDrawsGuard() {
  t_skip_draws = previous_;
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(rng_mutex);
  global_rng().seed(seed);
}

uint64_t random_u64() {
  Draws draws;
  return draws.rng();
}

// ---- generator state ----------------------------------------------------------------
// The standard library writes a generator's state as text (its words in
// decimal); the words are kept as int64 bit patterns, each read back as the
// uint64 it was, so nothing is rounded on the way.

namespace {
// How many words this standard library writes for an mt19937_64 (the
// standard's 312, or 313 where the position within them follows).
size_t state_words() {
  static const size_t count = [] {
    std::ostringstream text;
    text.imbue(std::locale::classic());
    text << std::mt19937_64();
    std::istringstream in(text.str());
    size_t n = 0;
    for (uint64_t word = 0; in >> word;) ++n;
    return n;
  }();
  return count;
}
}  // namespace

Tensor generator_state(const std::mt19937_64& generator) {
  std::ostringstream text;
  text.imbue(std::locale::classic());
  text << generator;
  std::istringstream in(text.str());
  in.imbue(std::locale::classic());
  Tensor state = empty({static_cast<int64_t>(state_words())}, kInt64);
  int64_t* out = state.data_ptr<int64_t>();
  size_t n = 0;
  for (uint64_t word = 0; n < state_words() && in >> word; ++n) std::memcpy(&out[n], &word, 8);
  AG_CHECK(n == state_words(), "generator_state", "the generator wrote fewer words than expected");
  return state;
}

void set_generator_state(std::mt19937_64& generator, const Tensor& state, const std::string& op) {
  const auto expected = static_cast<int64_t>(state_words());
  AG_CHECK(
      state.defined() && state.dtype() == kInt64 && state.dim() == 1 && state.numel() == expected,
      op.c_str(),
      "a generator state is int64 [" + std::to_string(expected) + "], got " +
          (state.defined() ? std::string(dtype_name(state.dtype())) + " " + shape_str(state.shape())
                           : std::string("none")));
  const Tensor words = state.contiguous();
  std::ostringstream text;
  text.imbue(std::locale::classic());
  for (int64_t i = 0; i < expected; ++i) {
    uint64_t word = 0;
    std::memcpy(&word, &words.data_ptr<int64_t>()[i], 8);
    text << word << ' ';
  }
  std::istringstream in(text.str());
  in.imbue(std::locale::classic());
  std::mt19937_64 restored;
  in >> restored;
  AG_CHECK(!in.fail(), op.c_str(),
           "the generator state's words are not a state the generator can take");
  generator = restored;
}

Tensor get_rng_state() {
  std::lock_guard<std::mutex> lock(rng_mutex);
  return generator_state(global_rng());
}

void set_rng_state(const Tensor& state) {
  std::mt19937_64 restored;
  set_generator_state(restored, state, "set_rng_state");
  std::lock_guard<std::mutex> lock(rng_mutex);
  global_rng() = restored;
}

namespace {
Tensor uniform_op(Shape shape, double low, double high, DType dtype, const char* op) {
  check_floating(dtype, op, "dtype");
  AG_CHECK(low <= high, op, "low must be <= high");
  if (t_skip_draws) return zeros(std::move(shape), dtype);
  // (make_filled allocates before the first draw: a bad shape draws nothing)
  Draws draws;
  return detail::make_filled(std::move(shape), dtype, op,
                             [&](int64_t) { return low + (high - low) * draws.next_uniform(); });
}
}  // namespace

Tensor uniform(Shape shape, double low, double high, DType dtype) {
  return uniform_op(std::move(shape), low, high, dtype, "uniform");
}

Tensor rand(Shape shape, DType dtype) {
  return uniform_op(std::move(shape), 0.0, 1.0, dtype, "rand");
}

Tensor randn(Shape shape, DType dtype) {
  check_floating(dtype, "randn", "dtype");
  const int64_t n = shape_numel(shape, "randn");
  if (t_skip_draws) return zeros(std::move(shape), dtype);
  Draws draws;
  // Box-Muller: two uniforms -> two independent standard normals (the second
  // one is kept for the next odd element).
  double second = 0;
  return detail::make_filled(std::move(shape), dtype, "randn", [&](int64_t i) {
    if (i % 2 == 1) return second;
    const double u1 = 1.0 - draws.next_uniform();  // (0, 1]: log is finite
    const double u2 = draws.next_uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    if (i + 1 < n) second = r * std::sin(2.0 * M_PI * u2);
    return r * std::cos(2.0 * M_PI * u2);
  });
}

}  // namespace ag
