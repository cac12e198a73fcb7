// Basic layers: Linear, Embedding and Dropout, with PyTorch's parameter names
// and shapes.
#pragma once

#include "attograd/nn/module.h"

namespace ag::nn {

// y = x W^T + b over the last axis of any-rank x.
// weight [out, in], bias [out]; both drawn from U(-1/sqrt(in), 1/sqrt(in)) as PyTorch.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  int64_t in_features, out_features;
  Tensor weight;  // [out, in]
  Tensor bias;    // [out], undefined when bias = false
};

// A lookup table: out[..., :] = weight[indices[...], :] (torch.nn.Embedding).
// indices: int64 of any shape, each in [0, num_embeddings) -> [*indices.shape, dim].
// weight [num, dim] is drawn from N(0, 1) as PyTorch. The backward adds each
// output row's gradient into the row it was read from (no one-hot matrix).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices) const;
  Tensor operator()(const Tensor& indices) const { return forward(indices); }

  int64_t num_embeddings, embedding_dim;
  Tensor weight;  // [num_embeddings, embedding_dim]
};

// Inverted dropout in training mode, identity in eval mode.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  double p;
};

}  // namespace ag::nn
