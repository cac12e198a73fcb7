// Puts a module back in the training mode it had, whatever happens between
// (prediction runs in eval mode and must leave a training model training).
#pragma once

#include "attograd/nn/module.h"

namespace ag::translate {

class ModeRestorer {
 public:
  explicit ModeRestorer(nn::Module& module) : module_(module), training_(module.is_training()) {}
  ~ModeRestorer() { module_.train(training_); }
  ModeRestorer(const ModeRestorer&) = delete;
  ModeRestorer& operator=(const ModeRestorer&) = delete;

 private:
  nn::Module& module_;
  bool training_;
};

}  // namespace ag::translate
