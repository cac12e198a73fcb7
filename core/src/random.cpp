// The global random generator and the random creation functions (rand,
// uniform, randn).
#include <cmath>
#include <mutex>
#include <random>

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
