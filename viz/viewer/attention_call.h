// One scaled dot-product attention call taken apart, for the step and graph
// scenes: the forward one library op per stage, so that every stage is a
// tensor to show, then the real backward of L = sum(output * G), watched
// with ag::backward's observer, so that every stage's gradient and every
// step of the sweep are the engine's own.
//
// Legend: B = 1 batch item, Tq queries, Tk keys, d query/key width, v value width.
//
//   scores  = bmm(Q, transpose(K, 1, 2))    [B, Tq, Tk]
//   scaled  = scores / sqrt(d)              [B, Tq, Tk]
//   masked  = where(keep, scaled, -1e6)     [B, Tq, Tk]  keep: key < valid_len (d2l)
//   weights = softmax(masked, -1)           [B, Tq, Tk]
//   dropped = dropout(weights, p, training) [B, Tq, Tk]
//   output  = bmm(dropped, V)               [B, Tq, v]
//   L       = sum(output * G)               []           G: a fixed random dL/doutput
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "attograd/attograd.h"

namespace ag::viewer {

enum Stage { kScores, kScaled, kMasked, kWeights, kDropped, kOutput, kNumStages };

// What the learner reads beside each stage.
struct StageText {
  const char* name;      // "scores"
  const char* code;      // the forward line that computes it
  const char* backward;  // the backward lambda's formula that produced dL/dname
};
extern const std::array<StageText, kNumStages> kStageText;

// The knobs both scenes offer.
struct CallKnobs {
  int valid_len = 4;
  float dropout = 0.2f;
  bool training = true;
  int seed = 3;
};
// The sliders and checkbox for `knobs`; true when one of them changed.
bool draw_call_knobs(CallKnobs& knobs);

// One step of the backward sweep as the observer saw it (copied: the
// observer's references live only during its call).
struct ObservedStep {
  const Node* node;  // alive as long as the call's loss
  Tensor grad_output;
  std::vector<Tensor> grad_inputs;
};

struct AttentionCall {
  static constexpr int64_t kQueries = 3, kKeys = 5, kDim = 4, kValueDim = 3;

  // Seeded inputs (float64; Q, K, V require grad), the forward stage by
  // stage and the observed backward. Throws ag::Error from the library.
  explicit AttentionCall(const CallKnobs& knobs);

  Tensor queries, keys, values;  // leaves [1, Tq, d], [1, Tk, d], [1, Tk, v]
  Tensor upstream;               // G = dL/doutput [1, Tq, v]
  Tensor valid_lens;             // int64 [1]
  Tensor keep;                   // bool [1, Tq, Tk]: key j < valid_len
  double dropout_p = 0;
  bool training = false;
  uint64_t dropout_seed = 0;  // manual_seed(dropout_seed) right before dropout: the same mask

  std::array<Tensor, kNumStages> stages;
  Tensor loss;
  // dL/dstage, each the grad_output the observer saw at the stage's node
  // (a stage dropout left as is shares the node, hence the gradient, of weights).
  std::array<Tensor, kNumStages> stage_grads;
  std::vector<ObservedStep> steps;  // the sweep, in the engine's order

  // Stage s computed from the stage before it (from Q, K for the scores).
  Tensor run_stage(int s, const Tensor& previous, const Tensor& q, const Tensor& k,
                   const Tensor& v) const;
  // L from q, k, v, with stage `replaced` (when >= 0) swapped for `value`:
  // what the finite differences perturb. Records nothing.
  double loss_of(const Tensor& q, const Tensor& k, const Tensor& v, int replaced = -1,
                 const Tensor& value = Tensor()) const;

  // The tensors a test needs to recompute every map, by name (the scenes' inputs()).
  std::map<std::string, Tensor> inputs() const;
};

// A [rows, cols] view for the heatmap widget: [] -> [1, 1], [n] -> [1, n],
// [..., r, c] -> [(...) r, c].
Tensor as_matrix(const Tensor& t);
// sqrt(sum(t^2)).
double norm(const Tensor& t);

}  // namespace ag::viewer
