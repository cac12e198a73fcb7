// The training scene's tasks (scene_training.h): each is a Trainer
// (training_session.h) that also says what it is and draws its steps.
//
//   training_retrieval.cpp        two scoring functions of nn's table on a retrieval task
//   training_nadaraya_watson.cpp  d2l's kernel regression with a learned width
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "scoring_choice.h"
#include "training_session.h"

namespace ag::viewer {

class TrainingTask : public Trainer {
 public:
  // The note under the controls: what the task is and what to look for.
  virtual const char* note() const = 0;
  // Draws `record`, the step `session` shows, in the space left; the
  // session draws the loss curves.
  virtual void draw(const TrainingSession& session,
                    const std::map<std::string, Tensor>& record) = 0;
};

// A task whose models each train with their own Adam, full batch: a step is
// an Adam step on the gradients of the last evaluation, then the next
// evaluation (forward and backward), whose record is the step's. A model
// without parameters has no Adam (nothing to step).
class AdamTask : public TrainingTask {
 public:
  std::map<std::string, Tensor> start(double lr) override;
  std::map<std::string, Tensor> step() override;
  // Adam's learning rate is fixed at construction (as in PyTorch's
  // constructor), so a new rate means a new Adam: its moments start over.
  void set_learning_rate(double lr) override;

 protected:
  // Data and initial parameters (the seed is set).
  virtual void init() = 0;
  // One Adam for each group (each model) that is not empty.
  virtual std::vector<std::vector<Tensor>> parameter_groups() const = 0;
  // Forward and backward at the current parameters (their grad() filled for
  // Adam): the record of this step, with the fields the history holds.
  virtual std::map<std::string, Tensor> evaluate() = 0;

 private:
  void rebuild_optimizers();
  std::map<std::string, Tensor> evaluate_with_fresh_gradients();

  std::vector<std::unique_ptr<optim::Adam>> optimizers_;
  double lr_ = 0;
};

// The retrieval task's pair before any is chosen: two functions that learn.
// The table's dot has no parameters, so on this task its loss could not move;
// general_scaled, q^T W_a k / sqrt(d), is the dot product with a learned W_a
// ((W_q q) . (W_k k) / sqrt(d), the hand-made model this task had before the
// table, is the same function with W_a = W_q^T W_k).
inline const ScoringPair kRetrievalDefaultPair = {"additive", "general_scaled"};
std::unique_ptr<TrainingTask> make_retrieval_task(const ScoringPair& pair);
std::unique_ptr<TrainingTask> make_nadaraya_watson_task();

// ---- the chain rule one link at a time ------------------------------------------------
// One backward call shows every link: the intermediate tensors ask to keep
// their gradients (Tensor::retain_grad, as PyTorch's), so after
//   scores  = f(parameters)           (built by the caller)
//   weights = weights_of(scores)
//   loss    = loss_of(weights)
//   loss.backward()
// weights.grad() is dL/dweights, scores.grad() is dL/dscores, and the
// parameters' grad() is filled as by any backward.
struct Staged {
  Tensor weights, loss, grad_weights, grad_scores;
};
Staged staged_backward(Tensor scores, const std::function<Tensor(const Tensor&)>& weights_of,
                       const std::function<Tensor(const Tensor&)>& loss_of);

}  // namespace ag::viewer
