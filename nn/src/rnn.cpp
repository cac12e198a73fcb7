#include "attograd/nn/rnn.h"

#include <cmath>
#include <string>

namespace ag::nn {

GRU::GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers, double dropout,
         bool bidirectional)
    : Module("GRU"),
      input_size(input_size),
      hidden_size(hidden_size),
      num_layers(num_layers),
      dropout(dropout),
      bidirectional(bidirectional) {
  AG_CHECK(input_size > 0 && hidden_size > 0 && num_layers > 0, "GRU",
           "sizes must be positive, got input_size " + std::to_string(input_size) +
               ", hidden_size " + std::to_string(hidden_size) + ", num_layers " +
               std::to_string(num_layers));
  AG_CHECK(dropout >= 0 && dropout < 1, "GRU",
           "dropout must be in [0, 1), got " + number_str(dropout));
  const int64_t H = hidden_size, D = num_directions();
  AG_CHECK(H <= kMaxNumel / 3 / D, "GRU", "hidden_size " + std::to_string(H) + " is too large");
  // PyTorch's default init: every parameter from U(-k, k), k = 1/sqrt(H),
  // drawn in registration order.
  const double k = 1.0 / std::sqrt(static_cast<double>(H));
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    const int64_t in = layer == 0 ? input_size : D * H;
    shape_numel({3 * H, in}, "GRU");
    for (int64_t direction = 0; direction < D; ++direction) {
      weight_ih.push_back(uniform({3 * H, in}, -k, k));
      weight_hh.push_back(uniform({3 * H, H}, -k, k));
      bias_ih.push_back(uniform({3 * H}, -k, k));
      bias_hh.push_back(uniform({3 * H}, -k, k));
    }
  }
  // Registered once the vectors are complete: registration keeps pointers.
  for (size_t i = 0; i < weight_ih.size(); ++i) {
    const std::string suffix = "_l" + std::to_string(i / static_cast<size_t>(D)) +
                               (i % static_cast<size_t>(D) == 1 ? "_reverse" : "");
    register_parameter("weight_ih" + suffix, &weight_ih[i]);
    register_parameter("weight_hh" + suffix, &weight_hh[i]);
    register_parameter("bias_ih" + suffix, &bias_ih[i]);
    register_parameter("bias_hh" + suffix, &bias_hh[i]);
  }
}

// x [T, B, in], h0 [D*L, B, H] -> output [T, B, D*H], h_n [D*L, B, H]
GRUOutput GRU::forward(const Tensor& x, const Tensor& h0, const Tensor& lengths) const {
  AG_CHECK(x.defined(), "GRU", "undefined input x");
  AG_CHECK(x.dim() == 3 && x.size(2) == input_size, "GRU",
           "expected x [T, B, input_size = " + std::to_string(input_size) + "], got " +
               shape_str(x.shape()));
  const int64_t T = x.size(0), B = x.size(1), H = hidden_size, D = num_directions();
  AG_CHECK(T > 0, "GRU", "expected a sequence length T > 0, got x " + shape_str(x.shape()));
  const DType dtype = weight_ih[0].dtype();
  AG_CHECK(x.dtype() == dtype, "GRU",
           std::string("x is ") + dtype_name(x.dtype()) + " " + shape_str(x.shape()) +
               " but the parameters are " + dtype_name(dtype) + " (convert one with .to())");
  if (h0.defined()) {
    AG_CHECK(h0.shape() == Shape({D * num_layers, B, H}), "GRU",
             "expected h0 [" + std::string(D == 2 ? "2*" : "") +
                 "num_layers, B, H] = " + shape_str({D * num_layers, B, H}) + " for x " +
                 shape_str(x.shape()) + ", got " + shape_str(h0.shape()));
    AG_CHECK(h0.dtype() == dtype, "GRU",
             std::string("h0 is ") + dtype_name(h0.dtype()) + " " + shape_str(h0.shape()) +
                 " but the parameters are " + dtype_name(dtype));
  }

  Tensor layer_input = x;  // [T, B, in_k]
  Tensor layer_output;     // [T, B, D*H]
  std::vector<Tensor> h_last;
  for (int64_t k = 0; k < num_layers; ++k) {
    std::vector<Tensor> directions;  // D x [T, B, H]
    for (int64_t d = 0; d < D; ++d) {
      const auto i = static_cast<size_t>(k * D + d);
      // The input side of every step at once: [T, B, in_k] -> [T, B, 3H].
      const Tensor gi_all = linear(layer_input, weight_ih[i], bias_ih[i]);
      const Tensor h =
          h0.defined() ? reshape(narrow(h0, 0, k * D + d, 1), {B, H}) : zeros({B, H}, dtype);
      // The T steps h_t = cell(gi_t, h_prev W_hh^T + b_hh, h_prev) as one op,
      // h_prev = h_{t-1} forward, h_{t+1} backward (d = 1): [T, B, H]
      const Tensor out =
          gru_layer(gi_all, h, weight_hh[i], bias_hh[i], /*reverse=*/d == 1, lengths);
      directions.push_back(out);
      // The direction's last step [1, B, H]: forward at T-1, backward at 0.
      // With T = 1 (a decoder's step) the output itself.
      h_last.push_back(T == 1 ? out : narrow(out, 0, d == 1 ? 0 : T - 1, 1));
    }
    // cat(forward, backward) on the features: [T, B, 2H]
    layer_output = D == 1 ? directions[0] : cat(directions, 2);
    // Dropout between layers (not after the last), in training mode only.
    const bool last = k + 1 == num_layers;
    layer_input = last ? layer_output : ag::dropout(layer_output, dropout, is_training());
  }
  return {layer_output, cat(h_last, 0)};  // h_n [D*L, B, H]
}

}  // namespace ag::nn
