// The library's scoring functions, one factory each (scoring_NAME.cpp);
// scoring_table.cpp names them. Internal to nn/: programs build them by name
// (make_scoring_function in scoring.h).
#pragma once

#include "attograd/nn/scoring.h"

namespace ag::nn {

std::unique_ptr<ScoringFunction> make_additive_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_dot_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_general_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_general_scaled_scoring(const ScoringSizes& sizes);
std::unique_ptr<ScoringFunction> make_multihead_scoring(const ScoringSizes& sizes);
// Keras' scores (keras.h's layers are their faces); use_scale: the learned
// scale Keras' layers have under that name (the table's entries: dot and
// additive with it, concat without, as Keras' defaults are).
std::unique_ptr<ScoringFunction> make_keras_dot_scoring(const ScoringSizes& sizes, bool use_scale);
std::unique_ptr<ScoringFunction> make_keras_concat_scoring(const ScoringSizes& sizes,
                                                           bool use_scale);
std::unique_ptr<ScoringFunction> make_keras_additive_scoring(const ScoringSizes& sizes,
                                                             bool use_scale);

// general's bilinear form q^T W_a k times `scale` (scoring_general.cpp),
// named `type_name`: the scaled variants' factories build on it.
std::unique_ptr<ScoringFunction> make_bilinear_scoring(const ScoringSizes& sizes,
                                                       const std::string& type_name, double scale);

// dot's score (scoring_dot.cpp): queries [..., Tq, d], keys [..., Tk, d] ->
// Q K^T / sqrt(d), or Q K^T * scale, [..., Tq, Tk]. Multihead's per head (its
// heads folded into the batch) and functional's scaled_dot_product_attention
// use it: one definition of the scaled dot product.
Tensor scaled_dot_scores(const Tensor& queries, const Tensor& keys,
                         std::optional<double> scale = std::nullopt);

// ag::Error under `who` unless the sizes give queries and keys one width
// (query_size == key_size; 0 and 0: any one width).
void check_one_width(const ScoringSizes& sizes, const std::string& who);
// ag::Error under `who` unless queries [B, Tq, d] and keys [B, Tk, d] share d.
void check_same_width(const Tensor& queries, const Tensor& keys, const std::string& who);

}  // namespace ag::nn
