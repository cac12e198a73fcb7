// Helpers for the state dicts a checkpoint is made of (train.cpp,
// training_run.cpp): entries under a prefix, and single numbers kept
// exactly (an int64 entry holds any int64; tensor() would go through a
// double).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "attograd/core.h"

namespace ag::translate {

using Entries = std::map<std::string, Tensor>;

// The entries of `state` whose names start with `prefix`, the prefix cut.
inline Entries entries_under(const Entries& state, const std::string& prefix) {
  Entries out;
  for (auto it = state.lower_bound(prefix); it != state.end() && it->first.starts_with(prefix);
       ++it)
    out.emplace(it->first.substr(prefix.size()), it->second);
  return out;
}

// Adds `entries` to `state`, `prefix` before every name.
inline void put_under(Entries& state, const std::string& prefix, const Entries& entries) {
  for (const auto& [name, value] : entries) state[prefix + name] = value;
}

// `state`'s entry `name`; ag::Error naming `op` and the entry when there is none.
inline const Tensor& entry(const Entries& state, const std::string& name, const std::string& op) {
  const auto it = state.find(name);
  AG_CHECK(it != state.end() && it->second.defined(), op.c_str(), "no entry '" + name + "'");
  return it->second;
}

// int64 [1] holding `value`, bit for bit.
inline Tensor int_entry(int64_t value) {
  Tensor t = empty({1}, kInt64);
  *t.data_ptr<int64_t>() = value;
  return t;
}

// The value of `state`'s int64 [1] entry `name`; ag::Error naming `op` and
// the entry when it is missing or of another kind.
inline int64_t read_int(const Entries& state, const std::string& name, const std::string& op) {
  const auto it = state.find(name);
  AG_CHECK(it != state.end() && it->second.defined() && it->second.dtype() == kInt64 &&
               it->second.numel() == 1,
           op.c_str(), "no int64 [1] entry '" + name + "'");
  return *it->second.contiguous().data_ptr<int64_t>();
}

// The value of `state`'s float64 [1] entry `name`, likewise.
inline double read_double(const Entries& state, const std::string& name, const std::string& op) {
  const auto it = state.find(name);
  AG_CHECK(it != state.end() && it->second.defined() && it->second.dtype() == kFloat64 &&
               it->second.numel() == 1,
           op.c_str(), "no float64 [1] entry '" + name + "'");
  return it->second.item();
}

}  // namespace ag::translate
