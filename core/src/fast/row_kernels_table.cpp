// One instruction set's row kernels (row_kernels.h), compiled once per set
// with AG_ROW_SET its namespace: this build's vector_math.cpp and
// vector_math_layers.cpp define the functions declared here.
#include "row_kernels.h"

namespace ag::detail::AG_ROW_SET {

decltype(detail::dropout_f32) dropout_f32;
decltype(detail::exp_f32) exp_f32;
decltype(detail::tanh_f32) tanh_f32;
decltype(detail::softmax_row_f32) softmax_row_f32;
decltype(detail::softmax_backward_row_f32) softmax_backward_row_f32;
decltype(detail::masked_softmax_rows_f32) masked_softmax_rows_f32;
decltype(detail::masked_softmax_backward_rows_f32) masked_softmax_backward_rows_f32;
decltype(detail::sum_f32) sum_f32;
decltype(detail::column_sums_f32) column_sums_f32;
decltype(detail::dot_f32) dot_f32;
decltype(detail::softmax_backward_given_f32) softmax_backward_given_f32;
decltype(detail::max_f32) max_f32;
decltype(detail::exp_affine_sum_f32) exp_affine_sum_f32;
decltype(detail::additive_scores_row_f32) additive_scores_row_f32;
decltype(detail::additive_scores_backward_row_f32) additive_scores_backward_row_f32;
decltype(detail::layer_norm_rows_f32) layer_norm_rows_f32;
decltype(detail::layer_norm_backward_rows_f32) layer_norm_backward_rows_f32;
decltype(detail::layer_norm_affine_grads_f32) layer_norm_affine_grads_f32;
decltype(detail::gru_cell_rows_f32) gru_cell_rows_f32;
decltype(detail::gru_cell_backward_rows_f32) gru_cell_backward_rows_f32;
decltype(detail::adam_f32) adam_f32;
decltype(detail::adam_f64) adam_f64;
decltype(detail::sum_squares_f32) sum_squares_f32;

extern const RowKernels kRowKernels;
const RowKernels kRowKernels = {
    .dropout_f32 = dropout_f32,
    .exp_f32 = exp_f32,
    .tanh_f32 = tanh_f32,
    .softmax_row_f32 = softmax_row_f32,
    .softmax_backward_row_f32 = softmax_backward_row_f32,
    .masked_softmax_rows_f32 = masked_softmax_rows_f32,
    .masked_softmax_backward_rows_f32 = masked_softmax_backward_rows_f32,
    .sum_f32 = sum_f32,
    .column_sums_f32 = column_sums_f32,
    .dot_f32 = dot_f32,
    .softmax_backward_given_f32 = softmax_backward_given_f32,
    .max_f32 = max_f32,
    .exp_affine_sum_f32 = exp_affine_sum_f32,
    .additive_scores_row_f32 = additive_scores_row_f32,
    .additive_scores_backward_row_f32 = additive_scores_backward_row_f32,
    .layer_norm_rows_f32 = layer_norm_rows_f32,
    .layer_norm_backward_rows_f32 = layer_norm_backward_rows_f32,
    .layer_norm_affine_grads_f32 = layer_norm_affine_grads_f32,
    .gru_cell_rows_f32 = gru_cell_rows_f32,
    .gru_cell_backward_rows_f32 = gru_cell_backward_rows_f32,
    .adam_f32 = adam_f32,
    .adam_f64 = adam_f64,
    .sum_squares_f32 = sum_squares_f32,
};

}  // namespace ag::detail::AG_ROW_SET
