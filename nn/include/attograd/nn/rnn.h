// Recurrent layers: nn::GRU, exactly torch.nn.GRU (time-major, stacked layers).
#pragma once

#include <vector>

#include "attograd/nn/module.h"

namespace ag::nn {

// What GRU::forward returns; unpacks with structured bindings:
//   auto [output, h_n] = gru.forward(x, h0);
struct GRUOutput {
  Tensor output;  // [T, B, H]: the last layer's hidden state at every step
  Tensor h_n;     // [num_layers, B, H]: every layer's hidden state after the last step
};

// A multi-layer gated recurrent unit, as torch.nn.GRU (batch_first = false,
// unidirectional, with biases). For each layer k and step t, with the layer's
// input x_t (the sequence for k = 0, layer k-1's output otherwise) and its
// previous hidden state h:
//   r  = sigmoid(W_ir x_t + b_ir + W_hr h + b_hr)
//   z  = sigmoid(W_iz x_t + b_iz + W_hz h + b_hz)
//   n  = tanh(W_in x_t + b_in + r * (W_hn h + b_hn))
//   h' = (1 - z) * n + z * h
// Parameters, registered in PyTorch's order and under its names, for k <
// num_layers (in_k = input_size for k = 0, hidden_size after):
//   weight_ih_l{k} [3H, in_k]  = (W_ir; W_iz; W_in) stacked
//   weight_hh_l{k} [3H, H]     = (W_hr; W_hz; W_hn)
//   bias_ih_l{k}   [3H]        = (b_ir; b_iz; b_in)
//   bias_hh_l{k}   [3H]        = (b_hr; b_hz; b_hn)
// all drawn from U(-1/sqrt(H), 1/sqrt(H)) as PyTorch. Dropout (probability
// `dropout`) applies to each layer's output except the last, in training
// mode only, as PyTorch.
//
// How it runs: per layer, one product [T*B, in_k] x [in_k, 3H] gives the
// input side of every step at once; then ag::gru_layer runs the T steps
// (per step one [B, H] x [H, 3H] product and the gate math of ag::gru_cell)
// as one autograd node, whose backward does one weight-gradient product for
// W_hh over all steps.
class GRU : public Module {
 public:
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, double dropout = 0.0);
  // x [T, B, input_size]; h0 [num_layers, B, H], undefined = zeros. x, h0 and
  // the parameters share one floating dtype.
  GRUOutput forward(const Tensor& x, const Tensor& h0 = Tensor()) const;
  GRUOutput operator()(const Tensor& x, const Tensor& h0 = Tensor()) const {
    return forward(x, h0);
  }

  int64_t input_size, hidden_size, num_layers;
  double dropout;
  // One entry per layer; registered as weight_ih_l0, weight_hh_l0, bias_ih_l0,
  // bias_hh_l0, weight_ih_l1, ...
  std::vector<Tensor> weight_ih, weight_hh, bias_ih, bias_hh;
};

}  // namespace ag::nn
