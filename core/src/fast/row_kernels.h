// The row kernels of vector_math.h for one instruction set. vector_math.cpp
// and vector_math_layers.cpp are plain loops the compiler vectorises; CMake
// compiles them once per set (CMakeLists.txt: generic, and on x86-64 avx2 and
// avx512), each time in a namespace of the set's name, and each build's
// row_kernels_table.cpp lists its functions here. vector_math.h's functions
// call the set the kernels run (attograd/kernels/instruction_set.h), and a
// test can call any set through row_kernels(set).
#pragma once

#include "attograd/kernels/instruction_set.h"
#include "vector_math.h"

namespace ag::detail {

struct RowKernels {
  decltype(&ag::detail::dropout_f32) dropout_f32;
  decltype(&ag::detail::exp_f32) exp_f32;
  decltype(&ag::detail::tanh_f32) tanh_f32;
  decltype(&ag::detail::softmax_row_f32) softmax_row_f32;
  decltype(&ag::detail::softmax_backward_row_f32) softmax_backward_row_f32;
  decltype(&ag::detail::masked_softmax_rows_f32) masked_softmax_rows_f32;
  decltype(&ag::detail::masked_softmax_backward_rows_f32) masked_softmax_backward_rows_f32;
  decltype(&ag::detail::sum_f32) sum_f32;
  decltype(&ag::detail::column_sums_f32) column_sums_f32;
  decltype(&ag::detail::dot_f32) dot_f32;
  decltype(&ag::detail::softmax_backward_given_f32) softmax_backward_given_f32;
  decltype(&ag::detail::max_f32) max_f32;
  decltype(&ag::detail::exp_affine_sum_f32) exp_affine_sum_f32;
  decltype(&ag::detail::additive_scores_row_f32) additive_scores_row_f32;
  decltype(&ag::detail::additive_scores_backward_row_f32) additive_scores_backward_row_f32;
  decltype(&ag::detail::layer_norm_rows_f32) layer_norm_rows_f32;
  decltype(&ag::detail::layer_norm_backward_rows_f32) layer_norm_backward_rows_f32;
  decltype(&ag::detail::layer_norm_affine_grads_f32) layer_norm_affine_grads_f32;
  decltype(&ag::detail::gru_cell_rows_f32) gru_cell_rows_f32;
  decltype(&ag::detail::gru_cell_backward_rows_f32) gru_cell_backward_rows_f32;
  decltype(&ag::detail::adam_f32) adam_f32;
  decltype(&ag::detail::adam_f64) adam_f64;  // no SIMD: the same bits from every set's build
  decltype(&ag::detail::sum_squares_f32) sum_squares_f32;
};

// The kernels of `set` (ag::Error if this build or CPU cannot run it): the
// generic build for scalar and neon (AArch64's baseline has NEON), the set's
// own build for avx2 and avx512.
const RowKernels& row_kernels(kernels::InstructionSet set);

}  // namespace ag::detail
