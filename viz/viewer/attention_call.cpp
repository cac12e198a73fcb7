// The attention call of attention_call.h: inputs, forward stages, observed backward.
#include "attention_call.h"

#include <imgui.h>

#include <cmath>
#include <unordered_map>

namespace ag::viewer {

// Each gradient is produced by the backward of the op that consumed the
// stage, i.e. of the next line: its formula quotes that line (llm.c style).
const std::array<StageText, kNumStages> kStageText{{
    {"scores", "scores = bmm(Q, transpose(K, 1, 2))",
     "forward: scaled = scores / sqrt(d)\nDivBackward: dscores = dscaled / sqrt(d)"},
    {"scaled", "scaled = scores / sqrt(d)",
     "forward: masked = where(keep, scaled, -1e6)\n"
     "WhereBackward: dscaled = where(keep, dmasked, 0)"},
    {"masked", "masked = where(keep, scaled, -1e6)",
     "forward: weights = softmax(masked, -1)\n"
     "SoftmaxBackward: dmasked = weights * (dweights - sum(dweights * weights, -1))"},
    {"weights", "weights = softmax(masked, -1)",
     "forward: dropped = weights * mask (mask: 0 or 1/(1-p))\n"
     "DropoutBackward: dweights = ddropped * mask"},
    {"dropped", "dropped = dropout(weights, p, training)",
     "forward: output = bmm(dropped, V)\nBmmBackward: ddropped = bmm(doutput, V^T)"},
    {"output", "output = bmm(dropped, V)",
     "forward: L = sum(output * G)\nMulBackward (after SumBackward's ones): doutput = G"},
}};

AttentionCall::AttentionCall(const CallKnobs& knobs)
    : dropout_p(knobs.dropout), training(knobs.training) {
  const uint64_t seed = static_cast<uint64_t>(knobs.seed);
  manual_seed(seed);
  queries = randn({1, kQueries, kDim}, kFloat64).requires_grad_();
  keys = randn({1, kKeys, kDim}, kFloat64).requires_grad_();
  values = randn({1, kKeys, kValueDim}, kFloat64).requires_grad_();
  upstream = randn({1, kQueries, kValueDim}, kFloat64);
  queries.set_name("Q");
  keys.set_name("K");
  values.set_name("V");
  upstream.set_name("G");
  // Dropout gets its own seed, so that every finite-difference re-run of the
  // forward redraws exactly the mask the real forward drew.
  dropout_seed = seed + 1;
  valid_lens = tensor({static_cast<double>(knobs.valid_len)}, {1}, kInt64);
  keep = nn::lengths_to_keep(valid_lens, {1, kQueries, kKeys});

  Tensor previous;
  for (int s = 0; s < kNumStages; ++s) {
    stages[s] = previous = run_stage(s, previous, queries, keys, values);
    // Names label the graph's edges; dropout off returns weights itself, which keeps its name.
    if (stages[s].name().empty()) stages[s].set_name(kStageText[s].name);
  }
  Tensor weighted = stages[kOutput] * upstream;
  weighted.set_name("output * G");
  loss = sum(weighted);

  // The real backward, watched: each node's grad_output is dL/d(its output).
  std::unordered_map<const Node*, Tensor> grad_of;
  backward(loss, Tensor(), /*retain_graph=*/false, [&](const BackwardStep& step) {
    steps.push_back({&step.node, step.grad_output, step.grad_inputs});
    grad_of[&step.node] = step.grad_output;
  });
  for (int s = 0; s < kNumStages; ++s) stage_grads[s] = grad_of.at(stages[s].grad_fn().get());
}

Tensor AttentionCall::run_stage(int s, const Tensor& previous, const Tensor& q, const Tensor& k,
                                const Tensor& v) const {
  switch (static_cast<Stage>(s)) {
    case kScores: {
      Tensor k_t = transpose(k, 1, 2);
      k_t.set_name("K^T");
      return bmm(q, k_t);
    }
    case kScaled:
      return previous / std::sqrt(static_cast<double>(kDim));
    case kMasked:
      return where(keep, previous, nn::kD2lMaskValue);
    case kWeights:
      return softmax(previous, -1);
    case kDropped:
      manual_seed(dropout_seed);
      return dropout(previous, dropout_p, training);
    case kOutput:
    case kNumStages:
      break;
  }
  return bmm(previous, v);
}

double AttentionCall::loss_of(const Tensor& q, const Tensor& k, const Tensor& v, int replaced,
                              const Tensor& value) const {
  NoGradGuard no_grad;
  Tensor previous;
  for (int s = 0; s < kNumStages; ++s) {
    previous = s == replaced ? value : run_stage(s, previous, q, k, v);
  }
  return sum(previous * upstream).item();
}

std::map<std::string, Tensor> AttentionCall::inputs() const {
  return {{"queries", queries.detach()},
          {"keys", keys.detach()},
          {"values", values.detach()},
          {"upstream", upstream},
          {"valid_lens", valid_lens},
          {"dropout_p", scalar_tensor(dropout_p, kFloat64)},
          {"training", tensor({training ? 1.0 : 0.0}, {}, kBool)},
          {"dropout_seed", tensor({static_cast<double>(dropout_seed)}, {}, kInt64)}};
}

Tensor as_matrix(const Tensor& t) {
  if (t.dim() == 0) return reshape(t, {1, 1});
  if (t.dim() == 1) return reshape(t, {1, t.size(0)});
  return reshape(t, {t.numel() / t.size(-1), t.size(-1)});
}

double norm(const Tensor& t) {
  NoGradGuard no_grad;
  return std::sqrt(sum(t * t).item());
}

bool draw_call_knobs(CallKnobs& knobs) {
  bool changed = false;
  changed |=
      ImGui::SliderInt("valid_len", &knobs.valid_len, 0, static_cast<int>(AttentionCall::kKeys));
  changed |= ImGui::SliderFloat("dropout p", &knobs.dropout, 0.0f, 0.9f, "%.2f");
  changed |= ImGui::Checkbox("training mode", &knobs.training);
  changed |= ImGui::SliderInt("seed", &knobs.seed, 0, 99);
  return changed;
}

}  // namespace ag::viewer
