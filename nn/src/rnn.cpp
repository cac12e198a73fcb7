#include "attograd/nn/rnn.h"

#include <cmath>
#include <string>

namespace ag::nn {

GRU::GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers, double dropout)
    : Module("GRU"),
      input_size(input_size),
      hidden_size(hidden_size),
      num_layers(num_layers),
      dropout(dropout) {
  AG_CHECK(input_size > 0 && hidden_size > 0 && num_layers > 0, "GRU",
           "sizes must be positive, got input_size " + std::to_string(input_size) +
               ", hidden_size " + std::to_string(hidden_size) + ", num_layers " +
               std::to_string(num_layers));
  AG_CHECK(dropout >= 0 && dropout < 1, "GRU",
           "dropout must be in [0, 1), got " + number_str(dropout));
  const int64_t H = hidden_size;
  AG_CHECK(H <= kMaxNumel / 3, "GRU", "hidden_size " + std::to_string(H) + " is too large");
  // PyTorch's default init: every parameter from U(-k, k), k = 1/sqrt(H),
  // drawn in registration order.
  const double k = 1.0 / std::sqrt(static_cast<double>(H));
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    const int64_t in = layer == 0 ? input_size : H;
    shape_numel({3 * H, in}, "GRU");
    weight_ih.push_back(uniform({3 * H, in}, -k, k));
    weight_hh.push_back(uniform({3 * H, H}, -k, k));
    bias_ih.push_back(uniform({3 * H}, -k, k));
    bias_hh.push_back(uniform({3 * H}, -k, k));
  }
  // Registered once the vectors are complete: registration keeps pointers.
  for (size_t layer = 0; layer < weight_ih.size(); ++layer) {
    const std::string l = "_l" + std::to_string(layer);
    register_parameter("weight_ih" + l, &weight_ih[layer]);
    register_parameter("weight_hh" + l, &weight_hh[layer]);
    register_parameter("bias_ih" + l, &bias_ih[layer]);
    register_parameter("bias_hh" + l, &bias_hh[layer]);
  }
}

// x [T, B, in], h0 [L, B, H] -> output [T, B, H], h_n [L, B, H]
GRUOutput GRU::forward(const Tensor& x, const Tensor& h0) const {
  AG_CHECK(x.defined(), "GRU", "undefined input x");
  AG_CHECK(x.dim() == 3 && x.size(2) == input_size, "GRU",
           "expected x [T, B, input_size = " + std::to_string(input_size) + "], got " +
               shape_str(x.shape()));
  const int64_t T = x.size(0), B = x.size(1), H = hidden_size;
  AG_CHECK(T > 0, "GRU", "expected a sequence length T > 0, got x " + shape_str(x.shape()));
  const DType dtype = weight_ih[0].dtype();
  AG_CHECK(x.dtype() == dtype, "GRU",
           std::string("x is ") + dtype_name(x.dtype()) + " " + shape_str(x.shape()) +
               " but the parameters are " + dtype_name(dtype) + " (convert one with .to())");
  if (h0.defined()) {
    AG_CHECK(h0.shape() == Shape({num_layers, B, H}), "GRU",
             "expected h0 [num_layers, B, H] = " + shape_str({num_layers, B, H}) + " for x " +
                 shape_str(x.shape()) + ", got " + shape_str(h0.shape()));
    AG_CHECK(h0.dtype() == dtype, "GRU",
             std::string("h0 is ") + dtype_name(h0.dtype()) + " " + shape_str(h0.shape()) +
                 " but the parameters are " + dtype_name(dtype));
  }

  Tensor layer_input = x;  // [T, B, in_k]
  Tensor layer_output;     // [T, B, H]
  std::vector<Tensor> h_last;
  for (int64_t k = 0; k < num_layers; ++k) {
    const size_t l = static_cast<size_t>(k);
    // The input side of every step at once: [T, B, in_k] -> [T, B, 3H].
    const Tensor gi_all = linear(layer_input, weight_ih[l], bias_ih[l]);
    const Tensor h = h0.defined() ? reshape(narrow(h0, 0, k, 1), {B, H}) : zeros({B, H}, dtype);
    // The T steps h_t = cell(gi_t, h_{t-1} W_hh^T + b_hh, h_{t-1}) as one op: [T, B, H]
    layer_output = gru_layer(gi_all, h, weight_hh[l], bias_hh[l]);
    // The last step [1, B, H]: with T = 1 (a decoder's step) the output itself.
    h_last.push_back(T == 1 ? layer_output : narrow(layer_output, 0, T - 1, 1));
    // Dropout between layers (not after the last), in training mode only.
    const bool last = k + 1 == num_layers;
    layer_input = last ? layer_output : ag::dropout(layer_output, dropout, is_training());
  }
  return {layer_output, cat(h_last, 0)};  // h_n [L, B, H]
}

}  // namespace ag::nn
