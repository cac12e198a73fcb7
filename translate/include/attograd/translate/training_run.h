// A training run as attograd-translate runs one, and the checkpoint from
// which a stopped run goes on to the same bits as one never stopped:
//
//   TrainingRun run(translator, data, options);
//   if (resuming) run.resume("run.ckpt.npz");      // where the last sitting stopped
//   while (!run.finished()) {
//     run.step();                                   // one Seq2SeqTrainer step
//     if (run.evaluation_due()) run.evaluate();     // the dev WER, the best kept
//     if (run.steps_taken() % 500 == 0) run.save_checkpoint("run.ckpt.npz");
//   }
//   const TrainingRun::End end = run.finish();      // the best dev parameters back
//
// Every eval_every steps and at the last, the model is scored: on the dev
// split when the data has one (g2p; its WER chooses the parameters kept,
// BestParameters), else on the held-out set (shown, never chosen on). The
// scores make the dev curve; with patience the run stops once that many
// evaluations in a row have not beaten the best dev WER (the published G2P
// recipes train "until no improvement").
//
// A checkpoint is one .npz: the translator as save_translator writes it (the
// state dict and meta.*, so the file names its model, task and vocabularies)
// and, under "run.", everything else the next step depends on: the options
// ("run.options.*"), a fingerprint of the data ("run.data.*"), the trainer
// (Adam's moments and step counts, the minibatch order: "run.trainer.*";
// the learning rate's schedule position is its step count), the global
// random generator ("run.rng": dropout, and the shards' seeds with threads
// > 1), the best dev parameters and score ("run.best.*"), the averaged
// snapshots ("run.average.*"), the curve ("run.curve.*"), every step's loss
// ("run.losses") and the training seconds so far ("run.seconds").
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attograd/translate/train.h"

namespace ag::translate {

struct RunOptions {
  TrainOptions train;
  // Score the model every eval_every steps and at the last step (0: never).
  int64_t eval_every = 0;
  // >= 2: also offer the dev split the mean of the parameters at the last
  // average_last evaluations at the end (CheckpointAverage). Needs a dev
  // split and eval_every > 0.
  int64_t average_last = 0;
  // > 0: finished once `patience` evaluations in a row have not beaten the
  // best dev WER. Needs a dev split and eval_every > 0.
  int64_t patience = 0;
};

// One evaluation: after `step` steps, the share of right answers (1 - WER
// for g2p) on the dev split, or on the held-out set when there is none.
struct CurvePoint {
  int64_t step = 0;
  double accuracy = 0;
  bool operator==(const CurvePoint&) const = default;
};

// REQUIRES: translator and data outlive the run; their vocabularies and step
// counts agree (as Seq2SeqTrainer's). Bad options are an ag::Error.
class TrainingRun {
 public:
  TrainingRun(Translator& translator, const Dataset& data, const RunOptions& options);
  ~TrainingRun();

  // Puts the run where the checkpoint at `path` left it, before the first
  // step. ag::Error naming the path and what differs when the checkpoint is
  // of another model, task, vocabulary, data or options, or is not a
  // checkpoint (a missing or damaged file); when the error comes from loading
  // the state itself (a damaged entry), the run is left half loaded, not to
  // be used.
  void resume(const std::string& path);
  // Writes the checkpoint to `path`: to path + ".partial" first, renamed over
  // `path` once whole, so that a run killed while writing leaves the last
  // checkpoint as it was. ag::Error while an evaluation is due (the
  // checkpoint would miss it).
  void save_checkpoint(const std::string& path) const;

  // The run has taken its steps, or run out of patience, and evaluated.
  bool finished() const;
  // One training step; returns its loss per target token. ag::Error when
  // finished() or while an evaluation is due.
  double step();
  // Whether the step just taken is to be evaluated (and is not yet).
  bool evaluation_due() const;
  // Scores the model (eval mode inside; training resumes in training mode)
  // and returns the point added to the curve.
  CurvePoint evaluate();

  // The end of the run: the average (average_last) offered to the dev split,
  // then the best dev parameters put back into the model, as they are to be
  // saved. Call once, when finished().
  struct End {
    int64_t best_step = -1;  // the kept parameters' step (-1: no dev evaluation kept any)
    double best_score = std::numeric_limits<double>::quiet_NaN();  // their dev WER
    int64_t averaged = 0;               // snapshots in the kept parameters (0: a step's own)
    std::optional<Evaluation> average;  // the average's dev evaluation, when it was offered
  };
  End finish();

  int64_t steps_taken() const;
  bool by_dev() const { return by_dev_; }  // the curve is the dev split's
  const std::vector<CurvePoint>& curve() const { return curve_; }
  // The dev WER of the parameters kept so far (a resumed run's too); NaN
  // before the first dev evaluation.
  double best_score() const {
    return best_.step() >= 0 ? best_.score() : std::numeric_limits<double>::quiet_NaN();
  }
  // This sitting's last evaluation (its figures, for the log); count 0 before any.
  const Evaluation& last_evaluation() const { return last_; }
  const std::vector<double>& losses() const { return losses_; }  // every step's, in order
  // Training time over every sitting, evaluations and checkpoints excluded.
  double seconds() const { return seconds_; }
  const RunOptions& options() const { return options_; }

 private:
  Translator& translator_;
  const Dataset& data_;
  RunOptions options_;
  bool by_dev_;
  std::unique_ptr<Seq2SeqTrainer> trainer_;
  BestParameters best_;
  std::optional<CheckpointAverage> average_;
  std::vector<CurvePoint> curve_;
  Evaluation last_;
  std::vector<double> losses_;
  double seconds_ = 0;
  bool ended_ = false;

  bool out_of_patience() const;
  std::map<std::string, Tensor> run_entries() const;  // the "run." entries, without the prefix
};

}  // namespace ag::translate
