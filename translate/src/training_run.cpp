// A training run and its checkpoint (training_run.h).
#include "attograd/translate/training_run.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include "attograd/attograd.h"
#include "attograd/translate/tasks.h"
#include "state_entries.h"

namespace ag::translate {

namespace {

// 1: the first layout (training_run.h's header).
constexpr int64_t kCheckpointFormat = 1;

// The options a run's every step depends on, each an entry of its own so
// that a mismatch names the option.
Entries option_entries(const RunOptions& o) {
  const auto number = [](double x) { return tensor({x}, {1}, kFloat64); };
  return {{"steps", int_entry(o.train.steps)},
          {"batch_size", int_entry(o.train.batch_size)},
          {"lr", number(o.train.lr)},
          {"cosine_lr", int_entry(o.train.cosine_lr ? 1 : 0)},
          {"warmup_steps", int_entry(o.train.warmup_steps)},
          {"max_grad_norm", number(o.train.max_grad_norm)},
          {"label_smoothing", number(o.train.label_smoothing)},
          {"seed", int_entry(static_cast<int64_t>(o.train.seed))},
          {"threads", int_entry(o.train.threads)},
          {"eval_every", int_entry(o.eval_every)},
          {"average_last", int_entry(o.average_last)},
          {"patience", int_entry(o.patience)}};
}

// The data, fingerprinted: each split's size and a 64-bit FNV-1a hash of
// every example (a dictionary with the same vocabularies and sizes but
// other words is told apart).
Entries data_entries(const Dataset& data) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto add = [&](const std::string& text, char end) {
    for (const char c : text + end)
      hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  };
  for (const auto* split : {&data.train(), &data.dev(), &data.heldout()})
    for (const Example& e : *split) {
      add(e.source, '\t');
      add(e.target, '\t');
      for (const std::string& alternative : e.alternatives) add(alternative, '\t');
      add("", '\n');
    }
  int64_t bits = 0;
  std::memcpy(&bits, &hash, 8);
  return {{"train", int_entry(static_cast<int64_t>(data.train().size()))},
          {"dev", int_entry(static_cast<int64_t>(data.dev().size()))},
          {"heldout", int_entry(static_cast<int64_t>(data.heldout().size()))},
          {"hash", int_entry(bits)}};
}

bool same_entry(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() != kInt64) return a.to_vector() == b.to_vector();
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr<int64_t>(), y.data_ptr<int64_t>(),
                     static_cast<size_t>(a.numel()) * 8) == 0;
}

// An entry for a message: a meta text as text ("dot"), numbers as numbers.
std::string describe(const std::string& name, const Tensor& value) {
  constexpr size_t kShown = 40;
  const std::vector<double> values = value.to_vector();
  const bool text = name.starts_with("meta.") && value.dtype() == kInt64 &&
                    std::all_of(values.begin(), values.end(),
                                [](double v) { return v == '\n' || (v >= 32 && v < 127); });
  std::string out;
  for (const double v : values) {
    if (out.size() >= kShown)
      return (text ? "'" + out + "...'" : out + ", ...") + " (" + std::to_string(values.size()) +
             " values)";
    if (text)
      out += v == '\n' ? ' ' : static_cast<char>(v);
    else
      out += (out.empty() ? "" : ", ") + number_str(v);
  }
  return text ? "'" + out + "'" : out.empty() ? "(none)" : out;
}

// ag::Error unless `file` and `own` have the same entries among those whose
// names start with `prefix`, naming the first that differs and both values.
void expect_same(const Entries& file, const Entries& own, const std::string& prefix,
                 const std::string& where, const std::string& what) {
  std::set<std::string> names;
  for (const auto* entries : {&file, &own})
    for (const auto& [name, value] : *entries)
      if (name.starts_with(prefix)) names.insert(name);
  for (const std::string& name : names) {
    const auto in_file = file.find(name), here = own.find(name);
    const std::string shown = name.substr(name.rfind('.') + 1);
    AG_CHECK(in_file != file.end() && here != own.end(), where.c_str(),
             "a checkpoint of another " + what + ": " +
                 (in_file == file.end() ? "the checkpoint has no '" : "this run has no '") + name +
                 "'");
    AG_CHECK(same_entry(in_file->second, here->second), where.c_str(),
             "a checkpoint of another " + what + ": " + (name.starts_with("meta.") ? name : shown) +
                 " is " + describe(name, in_file->second) + " in the checkpoint, " +
                 describe(name, here->second) + " in this run");
  }
}

}  // namespace

TrainingRun::TrainingRun(Translator& translator, const Dataset& data, const RunOptions& options)
    : translator_(translator),
      data_(data),
      options_(options),
      by_dev_(!data.dev().empty()),
      trainer_(std::make_unique<Seq2SeqTrainer>(translator, data, options.train)),
      best_(*translator.model) {
  AG_CHECK(options.eval_every >= 0 && options.average_last >= 0 && options.patience >= 0,
           "TrainingRun",
           "eval_every, average_last and patience must be >= 0, got " +
               std::to_string(options.eval_every) + ", " + std::to_string(options.average_last) +
               ", " + std::to_string(options.patience));
  AG_CHECK(
      (options.average_last == 0 && options.patience == 0) || (by_dev_ && options.eval_every > 0),
      "TrainingRun",
      "average_last and patience choose among the dev split's evaluations: they need " +
          (by_dev_ ? std::string("eval_every > 0")
                   : "data with a dev split (task '" + data.task().name + "' has none)"));
  if (options.average_last > 0) average_.emplace(*translator.model, options.average_last);
}

TrainingRun::~TrainingRun() = default;

int64_t TrainingRun::steps_taken() const {
  return trainer_->steps_taken();
}

bool TrainingRun::evaluation_due() const {
  const int64_t k = steps_taken();
  return options_.eval_every > 0 && k > 0 &&
         (k % options_.eval_every == 0 || k == options_.train.steps) &&
         (curve_.empty() || curve_.back().step != k);
}

bool TrainingRun::out_of_patience() const {
  if (options_.patience == 0 || best_.step() < 0) return false;
  int64_t since_best = 0;
  for (const CurvePoint& point : curve_) since_best += point.step > best_.step();
  return since_best >= options_.patience;
}

bool TrainingRun::finished() const {
  return !evaluation_due() && (steps_taken() >= options_.train.steps || out_of_patience());
}

double TrainingRun::step() {
  AG_CHECK(!evaluation_due(), "TrainingRun.step",
           "step " + std::to_string(steps_taken()) + " is to be evaluated first (evaluate())");
  AG_CHECK(!finished(), "TrainingRun.step",
           "the run is finished (" + std::to_string(steps_taken()) + " steps)");
  const auto start = std::chrono::steady_clock::now();
  const double loss = trainer_->step();
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  losses_.push_back(loss);
  return loss;
}

CurvePoint TrainingRun::evaluate() {
  AG_CHECK(evaluation_due(), "TrainingRun.evaluate",
           "no evaluation is due after step " + std::to_string(steps_taken()) + " (every " +
               std::to_string(options_.eval_every) + " steps and the last)");
  last_ = translate::evaluate(translator_, by_dev_ ? data_.dev() : data_.heldout());
  const Evaluation& e = last_;
  if (by_dev_) best_.offer(1 - e.accuracy, steps_taken());  // the dev WER
  if (average_) average_->add();
  curve_.push_back({steps_taken(), e.accuracy});
  return curve_.back();
}

TrainingRun::End TrainingRun::finish() {
  AG_CHECK(finished() && !ended_, "TrainingRun.finish",
           ended_ ? "the run has ended already" : "the run is not finished");
  ended_ = true;
  End end;
  if (average_ && average_->size() >= 2) {
    // The mean is one more candidate for the dev split to judge, at the
    // last step, where it ends.
    average_->load_into_model();
    end.average = translate::evaluate(translator_, data_.dev());
    if (best_.offer(1 - end.average->accuracy, steps_taken())) end.averaged = average_->size();
  }
  if (best_.step() >= 0) {
    best_.restore();
    end.best_step = best_.step();
    end.best_score = best_.score();
  }
  return end;
}

Entries TrainingRun::run_entries() const {
  Entries run{{"format", int_entry(kCheckpointFormat)},
              {"rng", get_rng_state()},
              {"seconds", tensor({seconds_}, {1}, kFloat64)},
              {"losses", tensor(losses_, {static_cast<int64_t>(losses_.size())}, kFloat64)}};
  put_under(run, "options.", option_entries(options_));
  put_under(run, "data.", data_entries(data_));
  put_under(run, "trainer.", trainer_->state_dict());
  put_under(run, "best.", best_.state_dict());
  if (average_) put_under(run, "average.", average_->state_dict());
  const auto n = static_cast<int64_t>(curve_.size());
  Tensor steps = empty({n}, kInt64);
  std::vector<double> accuracy;
  for (int64_t i = 0; i < n; ++i) {
    steps.data_ptr<int64_t>()[i] = curve_[static_cast<size_t>(i)].step;
    accuracy.push_back(curve_[static_cast<size_t>(i)].accuracy);
  }
  run["curve.step"] = steps;
  run["curve.accuracy"] = tensor(accuracy, {n}, kFloat64);
  return run;
}

void TrainingRun::save_checkpoint(const std::string& path) const {
  AG_CHECK(!evaluation_due(), "TrainingRun.save_checkpoint",
           "step " + std::to_string(steps_taken()) +
               " is to be evaluated first: the checkpoint would miss its evaluation");
  Entries file = translator_entries(translator_, path);
  put_under(file, "run.", run_entries());
  const std::string partial = path + ".partial";
  save_npz(partial, file);
  std::error_code error;
  std::filesystem::rename(partial, path, error);
  AG_CHECK(!error, "TrainingRun.save_checkpoint",
           "cannot rename '" + partial + "' to '" + path + "': " + error.message());
}

void TrainingRun::resume(const std::string& path) {
  const std::string where = "TrainingRun.resume: " + path;
  AG_CHECK(steps_taken() == 0 && curve_.empty(), where.c_str(),
           "a run resumes before its first step");
  Entries file;
  try {
    file = load_npz(path);
  } catch (const Error& e) {
    throw Error(where + ": cannot read the checkpoint: " + e.what());
  }
  AG_CHECK(file.count("run.format") > 0 && read_int(file, "run.format", where) == kCheckpointFormat,
           where.c_str(),
           "not a checkpoint of this program (no run.format " + std::to_string(kCheckpointFormat) +
               " entry)");
  // The same model, task and vocabularies (the meta.* entries), options and data.
  Entries own = translator_entries(translator_, path);
  expect_same(file, own, "meta.", where, "model, task or vocabulary");
  put_under(own, "run.", run_entries());
  expect_same(file, own, "run.options.", where, "run's options");
  expect_same(file, own, "run.data.", where, "data");
  // The curve and the losses, checked against the steps taken before anything is loaded.
  const int64_t steps_taken = read_int(entries_under(file, "run.trainer."), "steps_taken", where);
  const std::vector<double> steps = entry(file, "run.curve.step", where).to_vector(),
                            accuracy = entry(file, "run.curve.accuracy", where).to_vector();
  std::vector<double> losses = entry(file, "run.losses", where).to_vector();
  AG_CHECK(steps.size() == accuracy.size() && static_cast<int64_t>(losses.size()) == steps_taken &&
               std::is_sorted(steps.begin(), steps.end()) &&
               (steps.empty() || (steps.front() >= 1 && steps.back() <= steps_taken)),
           where.c_str(),
           "the curve (" + std::to_string(steps.size()) + " steps, " +
               std::to_string(accuracy.size()) + " scores) and the " +
               std::to_string(losses.size()) + " losses do not fit " + std::to_string(steps_taken) +
               " steps taken");
  std::vector<CurvePoint> curve;
  for (size_t i = 0; i < steps.size(); ++i)
    curve.push_back({static_cast<int64_t>(steps[i]), accuracy[i]});
  const double seconds = read_double(file, "run.seconds", where);
  // The state. (An error here leaves the run half loaded: not to be used.)
  try {
    Entries model;
    for (const auto& [name, value] : file)
      if (!name.starts_with("meta.") && !name.starts_with("run.")) model[name] = value;
    translator_.model->load_state_dict(model, /*strict=*/true);
    trainer_->load_state_dict(entries_under(file, "run.trainer."));
    best_.load_state_dict(entries_under(file, "run.best."));
    if (average_) average_->load_state_dict(entries_under(file, "run.average."));
    set_rng_state(entry(file, "run.rng", "set_rng_state"));
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  curve_ = std::move(curve);
  losses_ = std::move(losses);
  seconds_ = seconds;
}

}  // namespace ag::translate
