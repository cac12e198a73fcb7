#include "attograd/nn/optim.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "attograd/kernels/optim.h"

namespace ag::optim {

namespace {

// The gradient of `p` as a contiguous tensor of p's dtype, or undefined.
Tensor contiguous_grad(const Tensor& p) {
  const Tensor g = p.grad();
  return g.defined() ? g.contiguous() : g;
}

// ---- state dicts ---------------------------------------------------------------
// PyTorch's optimizer.state_dict() flattened into names: "state.<i>.<name>"
// per parameter, "param_groups.0.lr" for the one group.

constexpr const char* kLrKey = "param_groups.0.lr";

std::string state_key(size_t i, const char* name) {
  return "state." + std::to_string(i) + "." + name;
}

// The parameter index and entry name of a "state.<i>.<name>" key; ag::Error
// naming the key when it is no such key, i is out of range or name is not
// one of `names`.
std::pair<size_t, std::string> parse_state_key(const std::string& key, size_t params,
                                               const std::vector<std::string>& names,
                                               const std::string& op) {
  std::string known;
  for (const std::string& name : names) known += (known.empty() ? "" : ", ") + name;
  const std::string expected =
      "; expected state.<i>.{" + known + "} with i < " + std::to_string(params) + ", or " + kLrKey;
  const size_t dot = key.find('.', 6);
  AG_CHECK(key.rfind("state.", 0) == 0 && dot != std::string::npos && dot > 6, op.c_str(),
           "unexpected entry '" + key + "'" + expected);
  const std::string digits = key.substr(6, dot - 6), name = key.substr(dot + 1);
  const bool numeric = digits.size() <= 9 && std::all_of(digits.begin(), digits.end(), [](char c) {
                         return c >= '0' && c <= '9';
                       });
  const size_t index = numeric ? std::stoul(digits) : params;
  AG_CHECK(index < params && std::find(names.begin(), names.end(), name) != names.end(), op.c_str(),
           "unexpected entry '" + key + "'" + expected);
  return {index, name};
}

// A copy of `value` to hold as parameter `p`'s state; ag::Error naming `key`
// unless it has p's shape and dtype.
Tensor state_tensor(const Tensor& value, const Tensor& p, const std::string& key,
                    const std::string& op) {
  AG_CHECK(
      value.defined() && value.shape() == p.shape() && value.dtype() == p.dtype(), op.c_str(),
      "entry '" + key + "' is " +
          (value.defined() ? std::string(dtype_name(value.dtype())) + " " + shape_str(value.shape())
                           : std::string("undefined")) +
          ", its parameter " + dtype_name(p.dtype()) + " " + shape_str(p.shape()));
  return value.contiguous().clone();
}

// The learning rate of a state dict: its one float64 [1] entry "param_groups.0.lr".
double state_lr(const std::map<std::string, Tensor>& state, const std::string& op) {
  const auto it = state.find(kLrKey);
  AG_CHECK(it != state.end(), op.c_str(), std::string("no '") + kLrKey + "' entry");
  AG_CHECK(it->second.defined() && it->second.numel() == 1 && is_floating(it->second.dtype()),
           op.c_str(), std::string("'") + kLrKey + "' must hold one floating value");
  const double lr = it->second.item();
  AG_CHECK(std::isfinite(lr) && lr >= 0, op.c_str(),
           std::string("'") + kLrKey + "' holds an invalid learning rate " + number_str(lr));
  return lr;
}

}  // namespace

// ---- Optimizer ---------------------------------------------------------------

Optimizer::Optimizer(std::string name, std::vector<Tensor> params, double lr)
    : name_(std::move(name)), params_(std::move(params)) {
  AG_CHECK(!params_.empty(), name_.c_str(), "got an empty parameter list");
  // Where each tensor first appeared: the same tensor twice would be updated
  // twice per step (PyTorch refuses it too). Identity is the TensorImpl, not
  // the values (two parameters may well hold equal values).
  std::unordered_map<const TensorImpl*, size_t> first_position;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const std::string which = "parameter " + std::to_string(i);
    AG_CHECK(p.defined(), name_.c_str(), which + " is undefined");
    check_floating(p, name_.c_str(), which.c_str());
    AG_CHECK(p.is_leaf(), name_.c_str(),
             which + " of shape " + shape_str(p.shape()) + " is not a leaf (made by " +
                 p.grad_fn_name() + ")");
    AG_CHECK(p.is_contiguous(), name_.c_str(),
             which + " of shape " + shape_str(p.shape()) + " is not contiguous");
    const auto [seen, inserted] = first_position.emplace(p.impl(), i);
    AG_CHECK(inserted, name_.c_str(),
             which + " of shape " + shape_str(p.shape()) + " is the same tensor as parameter " +
                 std::to_string(seen->second) +
                 " (each parameter may appear once, or it would be updated twice per step)");
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  AG_CHECK(std::isfinite(lr) && lr >= 0, name_.c_str(),
           "invalid learning rate " + number_str(lr) + " (must be finite and >= 0)");
  lr_ = lr;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

// ---- SGD ---------------------------------------------------------------------

SGD::SGD(std::vector<Tensor> params, double lr, double momentum)
    : Optimizer("SGD", std::move(params), lr), momentum(momentum) {
  AG_CHECK(std::isfinite(momentum) && momentum >= 0, "SGD",
           "invalid momentum " + number_str(momentum) + " (must be finite and >= 0)");
  momentum_buffers_.resize(params_.size());
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const Tensor g = contiguous_grad(p);
    if (!g.defined()) continue;
    Tensor& buffer = momentum_buffers_[i];
    // The first momentum step: b = g (a copy, as torch.clone(g)).
    const bool first = momentum != 0 && !buffer.defined();
    if (first) buffer = g.clone();
    dispatch_floating(p.dtype(), "SGD.step", [&](auto tag) {
      using T = decltype(tag);
      const int64_t n = p.numel();
      T* w = p.data_ptr<T>();
      const T* d = g.data_ptr<T>();
      const T neg_lr = static_cast<T>(-lr);
      if (momentum == 0) {
        for (int64_t j = 0; j < n; ++j) w[j] += neg_lr * d[j];  // w <- w - lr g
        return;
      }
      T* b = buffer.data_ptr<T>();
      const T mu = static_cast<T>(momentum);
      if (!first)
        for (int64_t j = 0; j < n; ++j) b[j] = b[j] * mu + d[j];  // b <- momentum b + g
      for (int64_t j = 0; j < n; ++j) w[j] += neg_lr * b[j];      // w <- w - lr b
    });
    p.impl()->storage()->bump_version();  // graphs recorded before this step are stale
  }
}

std::map<std::string, Tensor> SGD::state_dict() const {
  std::map<std::string, Tensor> state{{kLrKey, tensor({lr}, {1}, kFloat64)}};
  for (size_t i = 0; i < params_.size(); ++i)
    if (momentum_buffers_[i].defined())
      state[state_key(i, "momentum_buffer")] = momentum_buffers_[i].clone();
  return state;
}

void SGD::load_state_dict(const std::map<std::string, Tensor>& state) {
  const std::string op = name_ + ".load_state_dict";
  const double new_lr = state_lr(state, op);
  std::vector<Tensor> buffers(params_.size());
  for (const auto& [key, value] : state) {
    if (key == kLrKey) continue;
    const size_t i = parse_state_key(key, params_.size(), {"momentum_buffer"}, op).first;
    AG_CHECK(momentum != 0, op.c_str(),
             "entry '" + key + "': SGD without momentum keeps no momentum buffers");
    buffers[i] = state_tensor(value, params_[i], key, op);
  }
  momentum_buffers_ = std::move(buffers);
  set_lr(new_lr);
}

// ---- Adam --------------------------------------------------------------------

Adam::Adam(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps)
    : Optimizer("Adam", std::move(params), lr), beta1(betas.first), beta2(betas.second), eps(eps) {
  AG_CHECK(std::isfinite(eps) && eps >= 0, "Adam",
           "invalid eps " + number_str(eps) + " (must be finite and >= 0)");
  AG_CHECK(beta1 >= 0 && beta1 < 1, "Adam",
           "invalid beta1 " + number_str(beta1) + " (must be in [0, 1))");
  AG_CHECK(beta2 >= 0 && beta2 < 1, "Adam",
           "invalid beta2 " + number_str(beta2) + " (must be in [0, 1))");
  for (const Tensor& p : params_) {
    exp_avg_.push_back(zeros(p.shape(), p.dtype()));
    exp_avg_sq_.push_back(zeros(p.shape(), p.dtype()));
  }
  steps_.assign(params_.size(), 0);
}

void Adam::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const Tensor g = contiguous_grad(p);
    if (!g.defined()) continue;
    const int64_t t = ++steps_[i];
    // The scalars in double, as torch computes them in Python; the kernel
    // rounds them to the parameter's dtype where they meet a tensor.
    kernels::AdamStep coefficients;
    coefficients.beta1 = beta1;
    coefficients.beta2 = beta2;
    coefficients.eps = eps;
    coefficients.step_size = lr / (1 - std::pow(beta1, static_cast<double>(t)));
    coefficients.bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, static_cast<double>(t)));
    dispatch_floating(p.dtype(), "Adam.step", [&](auto tag) {
      using T = decltype(tag);
      kernels::adam_update(p.data_ptr<T>(), g.data_ptr<T>(), exp_avg_[i].data_ptr<T>(),
                           exp_avg_sq_[i].data_ptr<T>(), p.numel(), coefficients);
    });
    p.impl()->storage()->bump_version();  // graphs recorded before this step are stale
  }
}

std::map<std::string, Tensor> Adam::state_dict() const {
  std::map<std::string, Tensor> state{{kLrKey, tensor({lr}, {1}, kFloat64)}};
  for (size_t i = 0; i < params_.size(); ++i) {
    if (steps_[i] == 0) continue;  // no step yet: no state (PyTorch's)
    state[state_key(i, "step")] = scalar_tensor(static_cast<double>(steps_[i]), kInt64);
    state[state_key(i, "exp_avg")] = exp_avg_[i].clone();
    state[state_key(i, "exp_avg_sq")] = exp_avg_sq_[i].clone();
  }
  return state;
}

void Adam::load_state_dict(const std::map<std::string, Tensor>& state) {
  const std::string op = name_ + ".load_state_dict";
  const double new_lr = state_lr(state, op);
  std::vector<Tensor> m(params_.size()), v(params_.size());
  std::vector<int64_t> steps(params_.size(), 0);
  for (const auto& [key, value] : state) {
    if (key == kLrKey) continue;
    const auto [i, name] =
        parse_state_key(key, params_.size(), {"step", "exp_avg", "exp_avg_sq"}, op);
    if (name == "step") {
      // At most 2^53: a count a float64 holds exactly (tensor() reads doubles).
      AG_CHECK(value.defined() && value.dtype() == kInt64 && value.numel() == 1 &&
                   value.item() >= 1 && value.item() <= 0x1p53,
               op.c_str(), "entry '" + key + "' must be one int64 step count >= 1");
      steps[i] = static_cast<int64_t>(value.item());
    } else {
      (name == "exp_avg" ? m : v)[i] = state_tensor(value, params_[i], key, op);
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const bool any = steps[i] > 0 || m[i].defined() || v[i].defined();
    AG_CHECK(!any || (steps[i] > 0 && m[i].defined() && v[i].defined()), op.c_str(),
             "parameter " + std::to_string(i) +
                 " has some of state.<i>.{step, exp_avg, exp_avg_sq} but not all three");
    if (!any) {  // no step yet, as at construction
      m[i] = zeros(params_[i].shape(), params_[i].dtype());
      v[i] = zeros(params_[i].shape(), params_[i].dtype());
    }
  }
  exp_avg_ = std::move(m);
  exp_avg_sq_ = std::move(v);
  steps_ = std::move(steps);
  set_lr(new_lr);
}

// ---- StepLR ------------------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : optimizer_(optimizer), step_size_(step_size), gamma_(gamma) {
  AG_CHECK(step_size >= 1, "StepLR",
           "invalid step_size " + std::to_string(step_size) + " (must be >= 1)");
  AG_CHECK(std::isfinite(gamma) && gamma >= 0, "StepLR",
           "invalid gamma " + number_str(gamma) + " (must be finite and >= 0)");
}

// PyTorch's chainable form: lr <- lr * gamma at every multiple of step_size.
void StepLR::step() {
  ++last_epoch_;
  if (last_epoch_ % step_size_ == 0) optimizer_.set_lr(optimizer_.lr * gamma_);
}

// ---- CosineAnnealingLR -------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : optimizer_(optimizer), t_max_(T_max), eta_min_(eta_min), base_lr_(optimizer.lr) {
  AG_CHECK(T_max >= 1, "CosineAnnealingLR",
           "invalid T_max " + std::to_string(T_max) + " (must be >= 1)");
  AG_CHECK(std::isfinite(eta_min) && eta_min >= 0, "CosineAnnealingLR",
           "invalid eta_min " + number_str(eta_min) + " (must be finite and >= 0)");
}

// PyTorch's chainable form (torch/optim/lr_scheduler.py, CosineAnnealingLR.get_lr):
// lr_e = (1 + cos(pi e / T)) / (1 + cos(pi (e - 1) / T)) (lr_(e-1) - eta_min) + eta_min,
// except one epoch past each minimum, where that ratio's denominator is 0 and
// the step adds (base - eta_min) (1 - cos(pi / T)) / 2 instead. (PyTorch
// tests (e - 1 - T) % (2 T) == 0; it is written without 2 T, which overflows
// int64 for a T_max above 2^62.)
void CosineAnnealingLR::step() {
  ++last_epoch_;
  const double e = static_cast<double>(last_epoch_), T = static_cast<double>(t_max_);
  const double lr = optimizer_.lr;
  const int64_t past_minimum = last_epoch_ - 1 - t_max_;
  if (past_minimum >= 0 && past_minimum % t_max_ == 0 && past_minimum / t_max_ % 2 == 0)
    optimizer_.set_lr(lr + (base_lr_ - eta_min_) * (1 - std::cos(M_PI / T)) / 2);
  else
    optimizer_.set_lr((1 + std::cos(M_PI * e / T)) / (1 + std::cos(M_PI * (e - 1) / T)) *
                          (lr - eta_min_) +
                      eta_min_);
}

}  // namespace ag::optim
