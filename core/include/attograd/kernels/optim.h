// The optimizers' loops over raw parameter arrays: Adam's update and the
// squared norm clip_grad_norm_ sums (nn/optim.cpp, nn/training.cpp). One pass
// over the data each, with no tensor made: a training step calls them once
// per parameter tensor, and the tensor-op version of the same math cost more
// in allocation and dispatch than in arithmetic at d2l's sizes.
//
// float32 runs the loops built for the kernels' instruction set (AVX-512,
// AVX2 or baseline: attograd/kernels/instruction_set.h); float64 the same
// source loops as they are (core/src/fast/vector_math.h). Adam computes each
// element as written, with no fused multiply-add, so every set's build gives
// the bits of a plain scalar loop on every CPU (the tests check
// bit for bit). The squared norm adds in 16 lanes: another order than one
// running sum, within 1e-12 relative (each square is exact in double).
#pragma once

#include <cstdint>

namespace ag::kernels {

// One Adam step's scalars, as torch.optim.Adam computes them in Python (in
// double) for step t.
struct AdamStep {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double step_size = 0;              // lr / (1 - beta1^t)
  double bias_correction2_sqrt = 1;  // sqrt(1 - beta2^t)
};

// For j in [0, n), with g the gradient:
//   m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2,
//   w <- w - step_size m / (sqrt(v) / bias_correction2_sqrt + eps).
// The scalars are rounded to the arrays' dtype first. No array may overlap another.
void adam_update(float* w, const float* g, float* m, float* v, int64_t n, const AdamStep& step);
void adam_update(double* w, const double* g, double* m, double* v, int64_t n, const AdamStep& step);

// sum_k x[k]^2, accumulated in double.
double sum_of_squares(const float* x, int64_t n);
double sum_of_squares(const double* x, int64_t n);

}  // namespace ag::kernels
