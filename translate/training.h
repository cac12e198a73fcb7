// attograd-translate's training run: train_seq2seq with a progress line, the
// held-out or dev figures every --eval-every steps, model selection on dev
// (the best parameters kept and restored) and the run's own measurements.
#pragma once

#include <cmath>
#include <cstdint>

#include "attograd/attograd.h"
#include "attograd/translate/train.h"
#include "flags.h"

namespace ag::translate::program {

// What training measured, for its summary line and --stats.
struct TrainingFigures {
  int64_t steps = 0, best_step = -1, rss_first = 0;
  int64_t averaged = 0;  // the checkpoints averaged into the kept parameters (0: none)
  double seconds = 0, cpu_seconds = 0;  // training's, the evaluations excluded
  int64_t page_faults = 0;              // the same
  ag::AllocatorStats allocator;         // at the end of training (hits, misses: its own)
  double loss_last = std::nan(""), loss_tail = std::nan("");
};

// Trains `steps` steps of the options' recipe on `d`, printing the setup and
// the progress on stderr: every --eval-every steps the held-out figure, or
// with a dev split the dev figure, keeping the best dev parameters (restored
// at the end), and with --average-last the mean of the last evaluations'
// parameters as one more candidate.
TrainingFigures train_model(Translator& translator, const Dataset& d, const Options& o,
                            int64_t steps);

// Resident set size in KiB (Linux /proc/self/statm; 0 elsewhere).
int64_t rss_kib();

}  // namespace ag::translate::program
