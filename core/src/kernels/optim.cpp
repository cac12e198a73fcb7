// The optimizers' loops (see attograd/kernels/optim.h): float32 goes to the
// SIMD clones in vector_math.cpp, float64 to the same loops without clones.
#include "attograd/kernels/optim.h"

#include "../vector_math.h"

namespace ag::kernels {

namespace {

template <typename T>
detail::AdamCoefficients<T> coefficients(const AdamStep& s) {
  return {static_cast<T>(s.beta1),
          static_cast<T>(1 - s.beta1),
          static_cast<T>(s.beta2),
          static_cast<T>(1 - s.beta2),
          static_cast<T>(s.bias_correction2_sqrt),
          static_cast<T>(s.eps),
          static_cast<T>(s.step_size)};
}

}  // namespace

void adam_update(float* w, const float* g, float* m, float* v, int64_t n, const AdamStep& step) {
  detail::adam_f32(w, g, m, v, n, coefficients<float>(step));
}

void adam_update(double* w, const double* g, double* m, double* v, int64_t n,
                 const AdamStep& step) {
  detail::adam_f64(w, g, m, v, n, coefficients<double>(step));
}

double sum_of_squares(const float* x, int64_t n) {
  return detail::sum_squares_f32(x, n);
}

double sum_of_squares(const double* x, int64_t n) {
  return detail::sum_squares_loop(x, n);
}

}  // namespace ag::kernels
