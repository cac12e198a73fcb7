// Optimizers with PyTorch's exact update rules: SGD (with momentum) and Adam.
//
//   ag::optim::Adam opt(model.parameters(), /*lr=*/1e-3);
//   for (...) {
//     opt.zero_grad();
//     Tensor loss = ...;
//     loss.backward();
//     opt.step();   // w <- w - lr * update(w.grad()), in place
//   }
//
// An optimizer holds handles to the parameters (sharing their storage) and
// writes the new values straight into that storage under NoGradGuard, so the
// module that owns the parameters sees them at once; each write bumps the
// storage's version, so a graph recorded before step() refuses to backward
// (its gradients would mix old and new weights). Parameters must be
// float32/float64 contiguous leaves, each given once (the same tensor twice
// would be updated twice a step: ag::Error naming both positions, as PyTorch
// refuses it); create the optimizer after Module::to(). Hyper-parameters must
// be finite (an infinite learning rate is an ag::Error, not a model of infs).
// A parameter whose grad() is undefined (no backward reached it) is skipped
// and its state (momentum, Adam's step count) is left untouched, as in PyTorch.
// The state (momentum buffers, Adam moments) has each parameter's shape and dtype.
//
// The learning rate may change between steps: opt.set_lr(x) by hand, or a
// scheduler such as StepLR, called once per epoch after opt.step().
//
// state_dict() / load_state_dict() save and restore what an optimizer has
// learned (Adam's moments and step counts, SGD's momentum buffers) and its
// learning rate, under the names of PyTorch's optimizer.state_dict()
// flattened: "state.<i>.exp_avg", "state.<i>.exp_avg_sq", "state.<i>.step"
// (Adam), "state.<i>.momentum_buffer" (SGD), "param_groups.0.lr"; i is the
// parameter's position. As in PyTorch, a parameter no step has reached yet
// has no state entries. An optimizer made anew over the same parameters and
// given the dict steps on exactly as the one that wrote it would have.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attograd/autograd.h"
#include "attograd/ops.h"

namespace ag::optim {

class Optimizer {
 public:
  // REQUIRES: params non-empty, each a defined float32/float64 contiguous
  // leaf, no tensor twice (compared by identity, not by value); finite
  // lr >= 0. `name` ("SGD", "Adam") starts every error message. (lr defaults
  // to 0 so that optimizers written before set_lr still compile.)
  Optimizer(std::string name, std::vector<Tensor> params, double lr = 0);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  // Drops every parameter's gradient (PyTorch 2's default set_to_none=True):
  // the next backward starts from nothing instead of accumulating.
  void zero_grad();
  const std::vector<Tensor>& params() const { return params_; }
  const std::string& name() const { return name_; }

  // The learning rate of the next step(). REQUIRES: finite lr >= 0 (throws otherwise).
  void set_lr(double lr);
  // Reads it (opt.lr, a read-only view of what set_lr writes).
  const double& lr = lr_;

  // The state (above); the tensors are copies.
  virtual std::map<std::string, Tensor> state_dict() const = 0;
  // Replaces the state with `state`. ag::Error, naming the entry, for an
  // entry this optimizer does not have, a tensor whose shape or dtype is not
  // its parameter's, a bad step count or learning rate, or a missing lr;
  // the optimizer is unchanged then.
  virtual void load_state_dict(const std::map<std::string, Tensor>& state) = 0;

 protected:
  std::string name_;
  std::vector<Tensor> params_;

 private:
  double lr_;
};

// torch.optim.lr_scheduler.StepLR: multiplies the optimizer's learning rate by
// gamma every step_size calls of step(). Call step() once per epoch, after
// the optimizer's; epoch e (0 before the first call) trains at
// lr * gamma^floor(e / step_size), computed as PyTorch does it, by one
// multiplication per decay, so the learning rates match torch's bit for bit.
// The optimizer must outlive the scheduler.
class StepLR {
 public:
  // REQUIRES: step_size >= 1, finite gamma >= 0.
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  void step();
  double get_last_lr() const { return optimizer_.lr; }
  int64_t last_epoch() const { return last_epoch_; }

 private:
  Optimizer& optimizer_;
  int64_t step_size_;
  double gamma_;
  int64_t last_epoch_ = 0;
};

// torch.optim.lr_scheduler.CosineAnnealingLR: the learning rate of epoch e
// follows half a cosine from the optimizer's lr at construction (base) down
// to eta_min at e = T_max, then back up, period 2 T_max:
//   lr_e = eta_min + (base - eta_min) (1 + cos(pi e / T_max)) / 2.
// Call step() once per epoch, after the optimizer's. Computed as PyTorch's
// step() does it (each lr from the previous one), so the rates match
// torch's, not only the formula. The optimizer must outlive the scheduler.
class CosineAnnealingLR {
 public:
  // REQUIRES: T_max >= 1, finite eta_min >= 0.
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);
  void step();
  double get_last_lr() const { return optimizer_.lr; }
  int64_t last_epoch() const { return last_epoch_; }

 private:
  Optimizer& optimizer_;
  int64_t t_max_;
  double eta_min_;
  double base_lr_;
  int64_t last_epoch_ = 0;
};

// Stochastic gradient descent, torch.optim.SGD without dampening, nesterov or
// weight decay:
//   momentum == 0:  w <- w - lr g
//   momentum  > 0:  b <- g on the first step, then b <- momentum b + g;
//                   w <- w - lr b
// REQUIRES: finite lr >= 0, finite momentum >= 0.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, double momentum = 0);
  void step() override;
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;

  const double momentum;

 private:
  std::vector<Tensor> momentum_buffers_;  // undefined until a parameter's first step
};

// Adam, torch.optim.Adam's default (no amsgrad, no weight decay), with bias
// correction. Per parameter, with t its own step count (1 on the first step):
//   m <- beta1 m + (1 - beta1) g           first moment
//   v <- beta2 v + (1 - beta2) g^2         second moment
//   w <- w - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// REQUIRES: finite lr >= 0, 0 <= beta1, beta2 < 1, finite eps >= 0.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, double lr, std::pair<double, double> betas = {0.9, 0.999},
       double eps = 1e-8);
  void step() override;
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;

  const double beta1, beta2, eps;

 private:
  std::vector<Tensor> exp_avg_, exp_avg_sq_;  // m and v, zeros at construction
  std::vector<int64_t> steps_;                // t per parameter
};

}  // namespace ag::optim
