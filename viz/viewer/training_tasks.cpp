// What the training scene's tasks share (see training_tasks.h): Adam per
// model, and the backward cut in three that shows dL/dweights and dL/dscores.
#include "training_tasks.h"

namespace ag::viewer {

std::map<std::string, Tensor> AdamTask::start(double lr) {
  init();
  lr_ = lr;
  rebuild_optimizers();
  return evaluate_with_fresh_gradients();
}

std::map<std::string, Tensor> AdamTask::step() {
  for (auto& optimizer : optimizers_) optimizer->step();
  return evaluate_with_fresh_gradients();
}

void AdamTask::set_learning_rate(double lr) {
  lr_ = lr;
  rebuild_optimizers();
}

void AdamTask::rebuild_optimizers() {
  optimizers_.clear();
  for (auto& group : parameter_groups()) {
    if (!group.empty()) optimizers_.push_back(std::make_unique<optim::Adam>(group, lr_));
  }
}

std::map<std::string, Tensor> AdamTask::evaluate_with_fresh_gradients() {
  for (auto& optimizer : optimizers_) optimizer->zero_grad();
  return evaluate();
}

Staged staged_backward(Tensor scores, const std::function<Tensor(const Tensor&)>& weights_of,
                       const std::function<Tensor(const Tensor&)>& loss_of) {
  scores.retain_grad();
  Tensor weights = weights_of(scores);
  weights.retain_grad();
  const Tensor loss = loss_of(weights);
  loss.backward();
  return {weights.detach(), loss.detach(), weights.grad(), scores.grad()};
}

}  // namespace ag::viewer
