#include "attograd/nn/layers.h"

#include <cmath>

namespace ag::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias)
    : Module("Linear"), in_features(in_features), out_features(out_features) {
  AG_CHECK(in_features > 0 && out_features > 0, "Linear",
           "feature counts must be positive, got in " + std::to_string(in_features) + ", out " +
               std::to_string(out_features));
  shape_numel({out_features, in_features}, "Linear");
  // PyTorch's default init: U(-k, k) with k = 1/sqrt(in_features).
  const double k = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = uniform({out_features, in_features}, -k, k);
  register_parameter("weight", &weight);
  if (has_bias) {
    bias = uniform({out_features}, -k, k);
    register_parameter("bias", &bias);
  }
}

// x [..., in] -> [..., out]
Tensor Linear::forward(const Tensor& x) const {
  return linear(x, weight, bias);
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim)
    : Module("Embedding"), num_embeddings(num_embeddings), embedding_dim(embedding_dim) {
  AG_CHECK(num_embeddings > 0 && embedding_dim > 0, "Embedding",
           "sizes must be positive, got num_embeddings " + std::to_string(num_embeddings) +
               ", embedding_dim " + std::to_string(embedding_dim));
  shape_numel({num_embeddings, embedding_dim}, "Embedding");
  weight = randn({num_embeddings, embedding_dim});  // PyTorch's default init: N(0, 1)
  register_parameter("weight", &weight);
}

// indices [...] -> [..., dim]: index_select picks the rows of the flattened
// indices (its backward scatters each row's gradient back, index_add style),
// then the result takes the indices' shape.
Tensor Embedding::forward(const Tensor& indices) const {
  AG_CHECK(indices.defined(), "Embedding", "undefined indices");
  AG_CHECK(indices.dtype() == kInt64, "Embedding",
           std::string("indices must be int64, got ") + dtype_name(indices.dtype()) + " " +
               shape_str(indices.shape()));
  const Tensor flat = reshape(indices, {-1});  // [N]
  const Tensor values = flat.contiguous();
  const int64_t* idx = values.data_ptr<int64_t>();
  for (int64_t i = 0; i < values.numel(); ++i)
    AG_CHECK(idx[i] >= 0 && idx[i] < num_embeddings, "Embedding",
             "index " + std::to_string(idx[i]) + " (flat position " + std::to_string(i) +
                 " of indices " + shape_str(indices.shape()) +
                 ") is out of range for num_embeddings = " + std::to_string(num_embeddings));
  Shape shape = indices.shape();
  shape.push_back(embedding_dim);
  return reshape(index_select(weight, 0, flat), shape);  // [N, dim] -> [..., dim]
}

Dropout::Dropout(double p) : Module("Dropout"), p(p) {
  AG_CHECK(p >= 0 && p < 1, "Dropout", "p must be in [0, 1), got " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& x) const {
  return dropout(x, p, is_training());
}

}  // namespace ag::nn
