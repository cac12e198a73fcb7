#include "attograd/nn/module.h"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace ag::nn {

void Module::register_parameter(std::string name, Tensor* parameter) {
  AG_CHECK(parameter != nullptr && parameter->defined(), "Module.register_parameter",
           type_name_ + ": parameter '" + name + "' is undefined");
  parameter->requires_grad_();
  parameters_.emplace_back(std::move(name), parameter);
}

void Module::register_module(std::string name, Module* child) {
  AG_CHECK(child != nullptr, "Module.register_module",
           type_name_ + ": sub-module '" + name + "' is null");
  child->training_ = training_;
  children_.emplace_back(std::move(name), child);
}

void Module::adopt_parts(const Module& other) {
  for (const auto& [name, slot] : other.parameters_) register_parameter(name, slot);
  for (const auto& [name, child] : other.children_) register_module(name, child);
}

void Module::collect(const std::string& prefix,
                     std::vector<std::pair<std::string, Tensor*>>& out) const {
  for (const auto& [name, slot] : parameters_) out.emplace_back(prefix + name, slot);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor*>> Module::all_parameter_slots() const {
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect("", slots);
  return slots;
}

// A tensor held by two slots (weights tied by assignment, b.weight = a.weight)
// is listed once, under its first name, as torch's named_parameters(): an
// optimizer given it twice would update it twice (and refuses to).
std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> named;
  std::unordered_set<const TensorImpl*> seen;
  for (const auto& [name, slot] : all_parameter_slots())
    if (seen.insert(slot->impl()).second) named.emplace_back(name, *slot);
  return named;
}

Tensor& Module::parameter(const std::string& name) {
  std::string known;
  for (const auto& [slot_name, slot] : all_parameter_slots()) {
    if (slot_name == name) return *slot;
    known += (known.empty() ? "" : ", ") + slot_name;
  }
  throw Error(type_name_ + ": no parameter '" + name + "' (it has " +
              (known.empty() ? std::string("none") : known) + ")");
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> params;
  for (auto& [name, p] : named_parameters()) params.push_back(std::move(p));
  return params;
}

StateDict Module::state_dict() const {
  StateDict state;
  for (const auto& [name, slot] : all_parameter_slots()) state[name] = slot->detach();
  return state;
}

// ---- StateDict ---------------------------------------------------------------------

Tensor& StateDict::operator[](const std::string& name) {
  for (auto& [key, value] : entries_)
    if (key == name) return value;
  return entries_.emplace_back(name, Tensor()).second;
}

const Tensor& StateDict::at(const std::string& name) const {
  for (const auto& [key, value] : entries_)
    if (key == name) return value;
  std::string message = "no entry named \"";
  message += name;
  message += "\" among its ";
  message += std::to_string(entries_.size());
  message += " entries";
  throw Error("state_dict: " + message);
}

size_t StateDict::count(const std::string& name) const {
  size_t n = 0;
  for (const auto& entry : entries_) n += entry.first == name;
  return n;
}

size_t StateDict::erase(const std::string& name) {
  return std::erase_if(entries_, [&](const Entry& entry) { return entry.first == name; });
}

StateDict::operator std::map<std::string, Tensor>() const {
  return std::map<std::string, Tensor>(entries_.begin(), entries_.end());
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  const std::string op = type_name_ + ".load_state_dict";
  const auto slots = all_parameter_slots();
  const auto shape_of = [](const Tensor& t) {
    return t.defined() ? shape_str(t.shape()) : std::string("none (undefined)");
  };
  // Check everything first, so a failed load changes nothing.
  std::set<std::string> known;
  for (const auto& [name, slot] : slots) {
    known.insert(name);
    auto it = state.find(name);
    if (it == state.end()) {
      AG_CHECK(!strict, op.c_str(),
               "missing entry '" + name + "' of shape " + shape_str(slot->shape()));
      continue;
    }
    AG_CHECK(it->second.defined() && it->second.shape() == slot->shape(), op.c_str(),
             "entry '" + name + "' has shape " + shape_of(it->second) +
                 ", the parameter has shape " + shape_str(slot->shape()));
    AG_CHECK(it->second.dtype() != kBool, op.c_str(), "entry '" + name + "' is a bool tensor");
  }
  if (strict) {
    for (const auto& [name, value] : state)
      AG_CHECK(known.count(name) > 0, op.c_str(),
               "unexpected entry '" + name + "' of shape " + shape_of(value));
  }
  // Then every source as a fresh copy in the parameter's dtype: converting or
  // allocating can still fail, and must fail before anything is written; and
  // a source that shares storage with another parameter (a state dict of this
  // very module, under swapped names) must not see that parameter's new values.
  std::vector<std::pair<Tensor, Tensor>> copies;  // (parameter, new values)
  for (const auto& [name, slot] : slots) {
    auto it = state.find(name);
    if (it == state.end()) continue;
    AG_CHECK(slot->is_contiguous(), op.c_str(), "parameter '" + name + "' is not contiguous");
    const Tensor source = it->second.detach();
    copies.emplace_back(
        *slot, source.dtype() == slot->dtype() ? source.clone() : source.to(slot->dtype()));
  }
  // Copy in place, which cannot fail: optimizers holding these parameters see
  // the new values, and graphs recorded before see the version change.
  // (Named references, not structured bindings: lambdas may capture those
  // only since clang 16, and the WebAssembly build uses clang 14.)
  for (const auto& copy : copies) {
    const Tensor &target = copy.first, &source = copy.second;
    dispatch_floating(target.dtype(), op.c_str(), [&](auto tag) {
      using T = decltype(tag);
      std::copy_n(source.data_ptr<T>(), source.numel(), target.data_ptr<T>());
    });
    target.impl()->storage()->bump_version();
  }
}

Module& Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
  return *this;
}

void Module::zero_grad() {
  for (const auto& [name, slot] : all_parameter_slots()) slot->zero_grad();
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, child] : children_) child->apply(fn);
  fn(*this);
  return *this;
}

Module& Module::to(DType dtype) {
  check_floating(dtype, (type_name_ + ".to").c_str(), "parameters");
  for (const auto& [name, slot] : all_parameter_slots())
    *slot = slot->detach().to(dtype).contiguous().requires_grad_();
  return *this;
}

}  // namespace ag::nn
