// The compare scene's arithmetic panel (compare_arithmetic.h): each of the
// table's scores worked with plain vector ops in float64, the way its class
// in nn/src/scoring_NAME.cpp computes it for a whole batch.
#include "compare_arithmetic.h"

#include <cmath>
#include <cstdio>

namespace ag::viewer {

namespace {

// "[0.12, -0.40, 1.03, ...]": at most four entries of a vector.
std::string brief(const Tensor& v) {
  const std::vector<double> values = v.to_vector();
  std::string out = "[";
  for (size_t i = 0; i < values.size() && i < 4; ++i) {
    char number[32];
    std::snprintf(number, sizeof number, "%s%.3f", i ? ", " : "", values[i]);
    out += number;
  }
  return out + (values.size() > 4 ? ", ...]" : "]");
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", x);
  return text;
}

// The parameter `name` of `function` in float64 ("W_q.weight").
Tensor weight(const nn::ScoringFunction& function, const std::string& name) {
  return function.state_dict().at(name).to(kFloat64);
}

// W x for W [out, in], x [in] -> [out].
Tensor apply(const Tensor& W, const Tensor& x) {
  return squeeze(matmul(W, unsqueeze(x, 1)), 1);
}

double dot(const Tensor& a, const Tensor& b) {
  return sum(a * b).item();
}

// Keras' learned scale, or `otherwise` when the function was built without one.
Tensor scale_or(const nn::ScoringFunction& function, const Tensor& otherwise) {
  return function.state_dict().count("scale") ? weight(function, "scale") : otherwise;
}

}  // namespace

ScoreArithmetic score_arithmetic(const std::string& name, const nn::ScoringFunction& function,
                                 const Tensor& query, const Tensor& key) {
  const Tensor q = query.to(kFloat64), k = key.to(kFloat64);
  ScoreArithmetic out;
  out.worked = true;
  auto& lines = out.lines;
  if (name == "additive") {
    // w_v . tanh(W_q q + W_k k)
    const Tensor a = apply(weight(function, "W_q.weight"), q);
    const Tensor b = apply(weight(function, "W_k.weight"), k);
    const Tensor t = tanh(a + b);
    out.score = dot(reshape(weight(function, "w_v.weight"), {-1}), t);
    lines = {"W_q q_i = " + brief(a), "W_k k_j = " + brief(b), "tanh(sum) = " + brief(t),
             "w_v . tanh(...) = " + number(out.score)};
  } else if (name == "dot") {
    // q . k / sqrt(d)
    const double product = dot(q, k), root = std::sqrt(static_cast<double>(q.numel()));
    out.score = product / root;
    lines = {"q_i . k_j = " + number(product),
             "/ sqrt(" + std::to_string(q.numel()) + ") = " + number(out.score)};
  } else if (name == "general" || name == "general_scaled") {
    // q . (W_a k), / sqrt(k) when scaled
    const Tensor projected = apply(weight(function, "W_a.weight"), k);
    const double product = dot(q, projected);
    lines = {"W_a k_j = " + brief(projected), "q_i . W_a k_j = " + number(product)};
    out.score = product;
    if (name == "general_scaled") {
      out.score = product / std::sqrt(static_cast<double>(k.numel()));
      lines.push_back("/ sqrt(" + std::to_string(k.numel()) + ") = " + number(out.score));
    }
  } else if (name == "multihead") {
    // each head: (W_q q)_h . (W_k k)_h / sqrt(h / n); the map shows their mean
    const Tensor a = apply(weight(function, "W_q.weight"), q);
    const Tensor b = apply(weight(function, "W_k.weight"), k);
    const int64_t n = function.sizes.num_heads, width = a.numel() / n;
    double total = 0;
    for (int64_t h = 0; h < n; ++h) {
      const double head = dot(narrow(a, 0, h * width, width), narrow(b, 0, h * width, width)) /
                          std::sqrt(static_cast<double>(width));
      lines.push_back("head " + std::to_string(h) + ": (W_q q_i) . (W_k k_j) / sqrt(" +
                      std::to_string(width) + ") = " + number(head));
      total += head;
    }
    out.score = total / static_cast<double>(n);
    lines.push_back("mean over the heads = " + number(out.score));
  } else if (name == "keras_dot") {
    // s q . k, s learned
    const double product = dot(q, k), s = scale_or(function, scalar_tensor(1, kFloat64)).item();
    out.score = s * product;
    lines = {"q_i . k_j = " + number(product), "s = " + number(s),
             "s (q_i . k_j) = " + number(out.score)};
  } else if (name == "keras_concat") {
    // c sum_d tanh(s (q_d + k_d))
    const Tensor t = tanh(scale_or(function, scalar_tensor(1, kFloat64)) * (q + k));
    const double c = weight(function, "concat_score_weight").item();
    out.score = c * sum(t).item();
    lines = {"tanh(q_i + k_j) = " + brief(t), "sum_d tanh(...) = " + number(sum(t).item()),
             "c = " + number(c), "c sum_d tanh(...) = " + number(out.score)};
  } else if (name == "keras_additive") {
    // sum_d s_d tanh(q_d + k_d)
    const Tensor t = tanh(q + k), s = scale_or(function, ones_like(t));
    out.score = dot(s, t);
    lines = {"tanh(q_i + k_j) = " + brief(t), "s = " + brief(s),
             "s . tanh(q_i + k_j) = " + number(out.score)};
  } else {
    out.worked = false;
  }
  return out;
}

}  // namespace ag::viewer
