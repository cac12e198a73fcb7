// The state dicts of train.h's classes, which a training run's checkpoint
// is made of (training_run.h).
#include "attograd/translate/train.h"
#include "state_entries.h"

namespace ag::translate {

namespace {

// ag::Error naming `op` unless `state` has exactly the model's state-dict
// names, each with its shape and dtype.
void check_state_dict(const nn::Module& model, const std::map<std::string, Tensor>& state,
                      const char* op) {
  const nn::StateDict own = model.state_dict();
  AG_CHECK(state.size() == own.size(), op,
           "a copy of the model's " + std::to_string(own.size()) + " entries has " +
               std::to_string(state.size()));
  for (const auto& [name, value] : own) {
    const auto it = state.find(name);
    AG_CHECK(it != state.end(), op, "no entry for the model's '" + name + "'");
    AG_CHECK(it->second.shape() == value.shape() && it->second.dtype() == value.dtype(), op,
             "'" + name + "' is " + dtype_name(it->second.dtype()) + " " +
                 shape_str(it->second.shape()) + ", the model's " + dtype_name(value.dtype()) +
                 " " + shape_str(value.shape()));
  }
}

}  // namespace

std::map<std::string, Tensor> Seq2SeqTrainer::state_dict() const {
  Entries state{{"steps_taken", int_entry(steps_taken_)}};
  put_under(state, "optimizer.", optimizer_->state_dict());
  put_under(state, "batches.", batches_.state());
  return state;
}

void Seq2SeqTrainer::load_state_dict(const std::map<std::string, Tensor>& state) {
  const char* op = "Seq2SeqTrainer.load_state_dict";
  for (const auto& [name, value] : state)
    AG_CHECK(
        name == "steps_taken" || name.starts_with("optimizer.") || name.starts_with("batches."), op,
        "unexpected entry '" + name + "'");
  const int64_t steps_taken = read_int(state, "steps_taken", op);
  AG_CHECK(steps_taken >= 0, op, "steps_taken " + std::to_string(steps_taken) + " < 0");
  optimizer_->load_state_dict(entries_under(state, "optimizer."));
  batches_.load_state(entries_under(state, "batches."));
  steps_taken_ = steps_taken;
}

std::map<std::string, Tensor> BestParameters::state_dict() const {
  Entries state{{"score", tensor({score_}, {1}, kFloat64)}, {"step", int_entry(step_)}};
  put_under(state, "parameters.", best_);
  return state;
}

void BestParameters::load_state_dict(const std::map<std::string, Tensor>& state) {
  const char* op = "BestParameters.load_state_dict";
  const double score = read_double(state, "score", op);
  const int64_t step = read_int(state, "step", op);
  Entries best = entries_under(state, "parameters.");
  AG_CHECK(state.size() == best.size() + 2, op,
           "unexpected entries besides score, step and parameters.*");
  AG_CHECK(step >= -1 && (step >= 0) == !best.empty(), op,
           "step " + std::to_string(step) + " with " + std::to_string(best.size()) +
               " parameters kept (a step >= 0 keeps the model's parameters, -1 none)");
  if (!best.empty()) check_state_dict(model_, best, op);
  best_ = std::move(best);
  score_ = score;
  step_ = step;
}

std::map<std::string, Tensor> CheckpointAverage::state_dict() const {
  Entries state;
  for (size_t k = 0; k < snapshots_.size(); ++k)
    put_under(state, std::to_string(k) + ".", snapshots_[k]);
  return state;
}

void CheckpointAverage::load_state_dict(const std::map<std::string, Tensor>& state) {
  const char* op = "CheckpointAverage.load_state_dict";
  std::deque<std::map<std::string, Tensor>> snapshots;
  size_t entries = 0;
  for (int64_t k = 0; entries < state.size(); ++k) {
    AG_CHECK(k < count_, op,
             "more than the " + std::to_string(count_) +
                 " snapshots it averages, or entries not named <k>.<parameter>");
    snapshots.push_back(entries_under(state, std::to_string(k) + "."));
    check_state_dict(model_, snapshots.back(), op);
    entries += snapshots.back().size();
  }
  snapshots_ = std::move(snapshots);
}

}  // namespace ag::translate
