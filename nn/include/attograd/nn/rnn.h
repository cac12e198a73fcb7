// Recurrent layers: nn::GRU, exactly torch.nn.GRU (time-major, stacked layers).
#pragma once

#include <vector>

#include "attograd/nn/module.h"

namespace ag::nn {

// What GRU::forward returns; unpacks with structured bindings:
//   auto [output, h_n] = gru.forward(x, h0);
struct GRUOutput {
  Tensor output;  // [T, B, D*H]: the last layer's hidden state at every step
  Tensor h_n;     // [D*num_layers, B, H]: every layer's (and direction's) final state
};

// A multi-layer gated recurrent unit, as torch.nn.GRU (batch_first = false,
// with biases; one direction, or two with bidirectional = true). For each
// layer k and step t, with the layer's input x_t (the sequence for k = 0, layer
// k-1's output otherwise) and its previous hidden state h:
//   r  = sigmoid(W_ir x_t + b_ir + W_hr h + b_hr)
//   z  = sigmoid(W_iz x_t + b_iz + W_hz h + b_hz)
//   n  = tanh(W_in x_t + b_in + r * (W_hn h + b_hn))
//   h' = (1 - z) * n + z * h
// Bidirectional (D = 2, Bahdanau et al.'s encoder): each layer runs a second
// GRU with its own weights from the last step to the first, and the layer's
// output at step t is cat(forward h_t, backward h_t) [B, 2H]: an annotation
// that has read the whole sequence, the past from the left and the future
// from the right. One direction: D = 1.
// Parameters, registered in PyTorch's order and under its names, for k <
// num_layers (in_k = input_size for k = 0, D*H after), the backward
// direction's after the forward's of the same layer with the suffix _reverse:
//   weight_ih_l{k}[_reverse] [3H, in_k]  = (W_ir; W_iz; W_in) stacked
//   weight_hh_l{k}[_reverse] [3H, H]     = (W_hr; W_hz; W_hn)
//   bias_ih_l{k}[_reverse]   [3H]        = (b_ir; b_iz; b_in)
//   bias_hh_l{k}[_reverse]   [3H]        = (b_hr; b_hz; b_hn)
// all drawn from U(-1/sqrt(H), 1/sqrt(H)) as PyTorch. Dropout (probability
// `dropout`) applies to each layer's output except the last, in training
// mode only, as PyTorch.
//
// How it runs: per layer and direction, one product [T*B, in_k] x [in_k, 3H]
// gives the input side of every step at once; then ag::gru_layer runs the T
// steps (per step one [B, H] x [H, 3H] product and the gate math of
// ag::gru_cell) as one autograd node, whose backward does one weight-gradient
// product for W_hh over all steps. The backward direction is the same op with
// reverse = true: it visits the positions from last to first and writes each
// h_t at its own position, so neither direction copies the sequence.
class GRU : public Module {
 public:
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, double dropout = 0.0,
      bool bidirectional = false);
  // x [T, B, input_size]; h0 [D*num_layers, B, H] (layer k's forward
  // direction at 2k, its backward at 2k + 1 when D = 2), undefined = zeros.
  // x, h0 and the parameters share one floating dtype.
  // lengths int64 [B] (optional, each in [1, T]): row b's steps t >=
  // lengths[b] are padding, as torch's pack_padded_sequence: every direction
  // carries its state through them unchanged, so the backward direction
  // starts at the row's last valid step and h_n holds each direction's state
  // at the row's last valid step (forward) or its first (backward); no valid
  // output depends on the padding. Where torch's pad_packed_sequence writes
  // zeros at the padded steps, output holds the carried states.
  GRUOutput forward(const Tensor& x, const Tensor& h0 = Tensor(),
                    const Tensor& lengths = Tensor()) const;
  GRUOutput operator()(const Tensor& x, const Tensor& h0 = Tensor(),
                       const Tensor& lengths = Tensor()) const {
    return forward(x, h0, lengths);
  }
  int64_t num_directions() const { return bidirectional ? 2 : 1; }

  int64_t input_size, hidden_size, num_layers;
  double dropout;
  bool bidirectional;
  // One entry per layer and direction, at k * D + d (d = 1: backward);
  // registered as weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0,
  // [weight_ih_l0_reverse, ...,] weight_ih_l1, ...
  std::vector<Tensor> weight_ih, weight_hh, bias_ih, bias_hh;
};

}  // namespace ag::nn
