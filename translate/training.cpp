// attograd-translate's training run (see training.h).
#include "training.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "attograd/translate/report.h"

namespace ag::translate::program {

namespace {

// What this process has used so far, read with one getrusage call.
struct Usage {
  // CPU seconds (user + system, every thread): on a busy machine the fair
  // measure of a one-thread run, beside the wall time.
  double cpu_seconds = 0;
  // Page faults taken without reading a file (minor faults): in a training
  // step, a fresh buffer's first touch of each page, which cached buffers
  // (attograd/allocator.h) avoid.
  int64_t page_faults = 0;
};
Usage process_usage() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return {static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
              static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6,
          r.ru_minflt};
}

// The starting line: everything that sets the run, defaults or not.
void print_setup(const Translator& translator, const Dataset& d, const Options& o, int64_t steps) {
  const ModelConfig& c = translator.config;
  char sizes[160];
  if (c.model == "transformer")
    std::snprintf(sizes, sizeof sizes, "hidden %lld, FFN %lld, %lld heads, %lld blocks, %s",
                  static_cast<long long>(c.num_hiddens), static_cast<long long>(c.ffn_num_hiddens),
                  static_cast<long long>(c.num_heads), static_cast<long long>(c.num_blks),
                  c.causal ? "look-ahead mask" : "NO look-ahead mask (ablation)");
  else
    std::snprintf(sizes, sizeof sizes,
                  "%s encoder, %s attention, embed %lld, hidden %lld, layers %lld",
                  c.encoder.c_str(), c.attention.c_str(), static_cast<long long>(c.embed_size),
                  static_cast<long long>(c.num_hiddens), static_cast<long long>(c.num_layers));
  if (!d.description().empty()) std::fprintf(stderr, "%s\n", d.description().c_str());
  std::fprintf(stderr,
               "training %s (%s, dropout %g) on %s: %zu training, %zu dev, %zu held-out examples; "
               "batch %lld, lr %g %s, %lld steps, %lld thread%s, eval every %lld\n",
               c.model.c_str(), sizes, c.dropout, d.task().name.c_str(), d.train().size(),
               d.dev().size(), d.heldout().size(), static_cast<long long>(o.batch), o.lr,
               o.lr_schedule.c_str(), static_cast<long long>(steps),
               static_cast<long long>(o.threads), o.threads == 1 ? "" : "s",
               static_cast<long long>(o.eval_every));
  if (o.label_smoothing > 0) std::fprintf(stderr, "label smoothing %g\n", o.label_smoothing);
}

// What the log shows of an evaluation: the task's headline figure, or its
// exact match.
std::string headline(const Task& task, const Evaluation& e) {
  for (const Figure& f : e.figures)
    if (!task.headline.empty() && f.key == task.headline) return f.text;
  return percent_figure("", "exact match", e.accuracy).text;
}

}  // namespace

int64_t rss_kib() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

TrainingFigures train_model(Translator& translator, const Dataset& d, const Options& o,
                            int64_t steps) {
  TrainingFigures figures;
  figures.steps = steps;
  const bool tty = isatty(STDERR_FILENO);
  print_setup(translator, d, o, steps);
  const Task& task = find_task(translator.task.name);
  const bool by_dev = !d.dev().empty();
  // Model selection on dev: the parameters of the fewest wrong answers.
  BestParameters best(*translator.model);
  std::string shown, best_shown;  // the headline of the last evaluation, of the best
  std::optional<CheckpointAverage> average;
  if (o.average_last > 0) average.emplace(*translator.model, o.average_last);
  double last_draw = -1;
  // The training loss of one batch is noisy: loss_tail averages the last
  // tenth of the steps (the ablation compares it between two models).
  const int64_t tail_steps = std::max<int64_t>(1, steps / 10);
  figures.loss_tail = 0;
  const auto on_step = [&](const StepInfo& s) {
    if (s.step == 1000) figures.rss_first = rss_kib();
    if (s.step > s.steps - tail_steps)
      figures.loss_tail += s.loss / static_cast<double>(tail_steps);
    const bool evaluate_now = o.eval_every > 0 && (s.step % o.eval_every == 0 || s.step == s.steps);
    if (evaluate_now) {
      const Evaluation e = evaluate(translator, by_dev ? d.dev() : d.heldout());
      shown = (by_dev ? "  dev " : "  held-out ") + headline(task, e);
      if (by_dev && best.offer(1 - e.accuracy, s.step)) best_shown = headline(task, e);
      if (by_dev) shown += " (best " + best_shown + ")";
      if (average) average->add();
    }
    // A TTY redraws one line ten times a second; a pipe or file gets a line
    // at every evaluation and every tenth of the run.
    const bool draw = tty ? (s.seconds - last_draw >= 0.1 || evaluate_now || s.step == s.steps)
                          : (evaluate_now || s.step == s.steps ||
                             s.step % std::max<int64_t>(1, s.steps / 10) == 0);
    if (!draw) return;
    last_draw = s.seconds;
    std::fprintf(stderr, "%sstep %lld/%lld  loss %.4f  %.1f steps/s  RSS %.1f MiB%s%s",
                 tty ? "\r\033[K" : "", static_cast<long long>(s.step),
                 static_cast<long long>(s.steps), s.loss, s.step / std::max(s.seconds, 1e-9),
                 static_cast<double>(rss_kib()) / 1024, shown.c_str(), tty ? "" : "\n");
    std::fflush(stderr);
  };
  TrainOptions train_options;
  train_options.cosine_lr = o.lr_schedule == "cosine";
  train_options.steps = steps;
  train_options.batch_size = o.batch;
  train_options.lr = o.lr;
  train_options.label_smoothing = o.label_smoothing;
  train_options.seed = o.seed;
  train_options.threads = o.threads;
  // The evaluations' time is measured apart and left out of the figures.
  const auto start = std::chrono::steady_clock::now();
  const Usage usage_start = process_usage();
  const ag::AllocatorStats allocator_start = ag::allocator_stats();
  double eval_seconds = 0, eval_cpu_seconds = 0;
  int64_t eval_faults = 0;
  figures.loss_last = train_seq2seq(translator, d, train_options, [&](const StepInfo& s) {
    const auto before = std::chrono::steady_clock::now();
    const Usage usage_before = process_usage();
    on_step(s);
    eval_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
    const Usage usage_after = process_usage();
    eval_cpu_seconds += usage_after.cpu_seconds - usage_before.cpu_seconds;
    eval_faults += usage_after.page_faults - usage_before.page_faults;
  });
  const Usage usage_end = process_usage();
  figures.cpu_seconds = usage_end.cpu_seconds - usage_start.cpu_seconds - eval_cpu_seconds;
  figures.page_faults = usage_end.page_faults - usage_start.page_faults - eval_faults;
  figures.allocator = ag::allocator_stats();
  figures.allocator.hits -= allocator_start.hits;
  figures.allocator.misses -= allocator_start.misses;
  figures.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() -
      eval_seconds;
  if (tty) std::fprintf(stderr, "\n");
  std::fprintf(stderr,
               "trained %lld steps in %.1f s (%.1f steps/s; %.1f CPU s, %.1f steps per CPU s; "
               "evaluation excluded); training loss %.4f (mean of the last %lld steps)\n",
               static_cast<long long>(steps), figures.seconds, steps / figures.seconds,
               figures.cpu_seconds, steps / std::max(figures.cpu_seconds, 1e-9), figures.loss_tail,
               static_cast<long long>(tail_steps));
  figures.best_step = steps;
  if (average && average->size() >= 2) {
    // The average is one more candidate for the dev split to judge; its
    // step is the last one's, where it ends.
    average->load_into_model();
    const Evaluation dev = evaluate(translator, d.dev());
    std::fprintf(stderr, "the mean of the last %lld evaluations' parameters: %s\n",
                 static_cast<long long>(average->size()), summary_line("dev", dev).c_str());
    if (best.offer(1 - dev.accuracy, steps)) figures.averaged = average->size();
  }
  if (best.step() >= 0) {
    best.restore();
    figures.best_step = best.step();
    if (figures.averaged > 0)
      std::fprintf(stderr, "kept the mean of the last %lld evaluations' parameters\n",
                   static_cast<long long>(figures.averaged));
    else
      std::fprintf(stderr, "kept the parameters of step %lld (best dev %s)\n",
                   static_cast<long long>(figures.best_step), best_shown.c_str());
  }
  return figures;
}

}  // namespace ag::translate::program
