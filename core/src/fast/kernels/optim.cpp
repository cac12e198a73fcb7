// The optimizers' loops (see attograd/kernels/optim.h): float32 goes to the
// row kernels of the instruction set (vector_math_layers.cpp, built per set),
// float64 to the same loops as they are; each set's build computes what its
// loop does, bit for bit, so the loop (in vector_math.h) is the reference.
//
// Both run on the kernel threads (ag::detail::parallel_for) in blocks of
// kBlock elements: one of the letters-to-sounds model's weights is millions
// of elements, and with the batch's work shared by two threads, one thread
// updating them all afterwards was a part of each step the second core
// watched. Adam's elements are independent, so its blocks give the bits of
// one pass. The squared norm is summed per block and the blocks' sums added
// in order: the same number on any count of threads.
#include "attograd/kernels/optim.h"

#include <algorithm>
#include <vector>

#include "../parallel.h"
#include "../vector_math.h"

namespace ag::kernels {

namespace {

constexpr int64_t kBlock = int64_t{1} << 16;  // elements: 256 KB of floats, a few tens of µs

template <typename T>
ag::detail::AdamCoefficients<T> coefficients(const AdamStep& s) {
  return {static_cast<T>(s.beta1),
          static_cast<T>(1 - s.beta1),
          static_cast<T>(s.beta2),
          static_cast<T>(1 - s.beta2),
          static_cast<T>(s.bias_correction2_sqrt),
          static_cast<T>(s.eps),
          static_cast<T>(s.step_size)};
}

// block_fn(begin, end) for every block [begin, end) of [0, n), on the kernel threads.
template <typename Fn>
void for_each_block(int64_t n, const Fn& block_fn) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  ag::detail::parallel_for(blocks, [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) block_fn(b * kBlock, std::min(n, (b + 1) * kBlock));
  });
}

// sum over blocks, in block order, of block_sum(begin, end)
template <typename Fn>
double sum_of_blocks(int64_t n, const Fn& block_sum) {
  if (n <= kBlock) return block_sum(0, n);
  std::vector<double> sums(static_cast<size_t>((n + kBlock - 1) / kBlock));
  for_each_block(n, [&](int64_t begin, int64_t end) {
    sums[static_cast<size_t>(begin / kBlock)] = block_sum(begin, end);
  });
  double total = 0;
  for (double s : sums) total += s;
  return total;
}

}  // namespace

void adam_update(float* w, const float* g, float* m, float* v, int64_t n, const AdamStep& step) {
  const auto c = coefficients<float>(step);
  for_each_block(n, [&](int64_t begin, int64_t end) {
    ag::detail::adam_f32(w + begin, g + begin, m + begin, v + begin, end - begin, c);
  });
}

void adam_update(double* w, const double* g, double* m, double* v, int64_t n,
                 const AdamStep& step) {
  const auto c = coefficients<double>(step);
  for_each_block(n, [&](int64_t begin, int64_t end) {
    ag::detail::adam_f64(w + begin, g + begin, m + begin, v + begin, end - begin, c);
  });
}

double sum_of_squares(const float* x, int64_t n) {
  return sum_of_blocks(n, [&](int64_t begin, int64_t end) {
    return ag::detail::sum_squares_f32(x + begin, end - begin);
  });
}

double sum_of_squares(const double* x, int64_t n) {
  return sum_of_blocks(n, [&](int64_t begin, int64_t end) {
    return ag::detail::sum_squares_loop(x + begin, end - begin);
  });
}

}  // namespace ag::kernels
