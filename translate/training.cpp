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
#include "attograd/translate/training_run.h"

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
  if (o.warmup > 0)
    std::fprintf(stderr, "warm-up %lld steps to lr %g, then %s\n", static_cast<long long>(o.warmup),
                 o.lr, o.lr_schedule == "cosine" ? "half a cosine to 0" : "1/sqrt(step)");
  if (c.encoder_hiddens > 0)
    std::fprintf(stderr, "encoder width %lld per direction\n",
                 static_cast<long long>(c.encoder_hiddens));
  if (c.norm_first) std::fprintf(stderr, "pre-LN blocks\n");
  if (o.patience > 0)
    std::fprintf(stderr, "patience %lld evaluations\n", static_cast<long long>(o.patience));
}

// What the log shows of an evaluation: the task's headline figure, or its
// exact match.
std::string headline(const Task& task, const Evaluation& e) {
  for (const Figure& f : e.figures)
    if (!task.headline.empty() && f.key == task.headline) return f.text;
  return percent_figure("", "exact match", e.accuracy).text;
}

// --curve's file: a line per evaluation, the dev WER in percent (a task
// with a dev split: the share of wrong answers), or the held-out accuracy.
void write_curve(const std::string& path, const TrainingRun& run) {
  std::ofstream out(path);
  out.precision(17);
  out << (run.by_dev() ? "step,dev_wer\n" : "step,heldout_accuracy\n");
  for (const CurvePoint& point : run.curve())
    out << point.step << ',' << (run.by_dev() ? 100 * (1 - point.accuracy) : point.accuracy)
        << '\n';
  if (!out) throw Error("--curve: cannot write '" + path + "'");
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
  const bool tty = isatty(STDERR_FILENO);
  print_setup(translator, d, o, steps);
  const Task& task = find_task(translator.task.name);
  RunOptions options;
  options.train.cosine_lr = o.lr_schedule == "cosine";
  options.train.warmup_steps = o.warmup;
  options.train.steps = steps;
  options.train.batch_size = o.batch;
  options.train.lr = o.lr;
  options.train.label_smoothing = o.label_smoothing;
  options.train.seed = o.seed;
  options.train.threads = o.threads;
  options.eval_every = o.eval_every;
  options.average_last = o.average_last;
  options.patience = o.patience;
  // Model selection on dev (in the run): the parameters of the fewest wrong answers.
  TrainingRun run(translator, d, options);
  const bool by_dev = run.by_dev();
  // The headline of the last evaluation, and the best: the run's own, the
  // dev WER it selects on (the share of wrong answers, as the curve file's),
  // which a resumed run has from its checkpoint.
  std::string shown;
  const auto best_shown = [](double best_score) {
    return percent_figure("", "WER", best_score).text;
  };
  if (!o.resume.empty()) {
    run.resume(o.resume);
    std::fprintf(stderr, "resumed from %s after step %lld\n", o.resume.c_str(),
                 static_cast<long long>(run.steps_taken()));
  }
  const int64_t first_step = run.steps_taken();
  double last_draw = -1;
  // The evaluations' and checkpoints' time is measured apart and left out of the figures.
  const auto start = std::chrono::steady_clock::now();
  const auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const Usage usage_start = process_usage();
  const ag::AllocatorStats allocator_start = ag::allocator_stats();
  double aside_cpu_seconds = 0;
  int64_t aside_faults = 0;
  while (!run.finished()) {
    const double loss = run.step();
    const int64_t step = run.steps_taken();
    const Usage usage_before = process_usage();
    if (step == 1000) figures.rss_first = rss_kib();
    const bool evaluate_now = run.evaluation_due();
    if (evaluate_now) {
      run.evaluate();
      shown = (by_dev ? "  dev " : "  held-out ") + headline(task, run.last_evaluation());
      if (by_dev) shown += " (best " + best_shown(run.best_score()) + ")";
    }
    if (!o.checkpoint.empty() && (step % o.checkpoint_every == 0 || run.finished()))
      run.save_checkpoint(o.checkpoint);
    const Usage usage_after = process_usage();
    aside_cpu_seconds += usage_after.cpu_seconds - usage_before.cpu_seconds;
    aside_faults += usage_after.page_faults - usage_before.page_faults;
    // A TTY redraws one line ten times a second; a pipe or file gets a line
    // at every evaluation and every tenth of the run.
    const double seconds = since_start();
    const bool last = run.finished();
    const bool draw = tty ? (seconds - last_draw >= 0.1 || evaluate_now || last)
                          : (evaluate_now || last || step % std::max<int64_t>(1, steps / 10) == 0);
    if (!draw) continue;
    last_draw = seconds;
    std::fprintf(stderr, "%sstep %lld/%lld  loss %.4f  %.1f steps/s  RSS %.1f MiB%s%s",
                 tty ? "\r\033[K" : "", static_cast<long long>(step), static_cast<long long>(steps),
                 loss, static_cast<double>(step - first_step) / std::max(seconds, 1e-9),
                 static_cast<double>(rss_kib()) / 1024, shown.c_str(), tty ? "" : "\n");
    std::fflush(stderr);
  }
  const Usage usage_end = process_usage();
  figures.steps = run.steps_taken();
  figures.sitting_steps = figures.steps - first_step;
  figures.cpu_seconds = usage_end.cpu_seconds - usage_start.cpu_seconds - aside_cpu_seconds;
  figures.page_faults = usage_end.page_faults - usage_start.page_faults - aside_faults;
  figures.allocator = ag::allocator_stats();
  figures.allocator.hits -= allocator_start.hits;
  figures.allocator.misses -= allocator_start.misses;
  figures.seconds = run.seconds();  // every sitting's steps
  // The training loss of one batch is noisy: loss_tail averages the last
  // tenth of the steps (the ablation compares it between two models).
  const std::vector<double>& losses = run.losses();
  const auto taken = static_cast<int64_t>(losses.size());
  const int64_t tail_steps = std::max<int64_t>(1, taken / 10);
  figures.loss_tail = 0;
  for (int64_t s = 1; s <= taken; ++s)
    if (s > taken - tail_steps)
      figures.loss_tail += losses[static_cast<size_t>(s - 1)] / static_cast<double>(tail_steps);
  figures.loss_last = losses.empty() ? std::nan("") : losses.back();
  if (tty) std::fprintf(stderr, "\n");
  std::fprintf(stderr,
               "trained %lld steps in %.1f s (%.1f steps/s; %.1f CPU s, %.1f steps per CPU s; "
               "evaluation excluded); training loss %.4f (mean of the last %lld steps)\n",
               static_cast<long long>(figures.steps), figures.seconds,
               figures.steps / std::max(figures.seconds, 1e-9), figures.cpu_seconds,
               figures.sitting_steps / std::max(figures.cpu_seconds, 1e-9), figures.loss_tail,
               static_cast<long long>(tail_steps));
  if (figures.steps < steps)
    std::fprintf(stderr, "stopped at step %lld: %lld evaluations without a better dev figure\n",
                 static_cast<long long>(figures.steps), static_cast<long long>(o.patience));
  const TrainingRun::End end = run.finish();
  if (end.average)
    std::fprintf(
        stderr, "the mean of the last %lld evaluations' parameters: %s\n",
        static_cast<long long>(std::min(o.average_last, static_cast<int64_t>(run.curve().size()))),
        summary_line("dev", *end.average).c_str());
  figures.averaged = end.averaged;
  figures.best_step = end.best_step >= 0 ? end.best_step : figures.steps;
  if (end.best_step >= 0) {
    if (figures.averaged > 0)
      std::fprintf(stderr, "kept the mean of the last %lld evaluations' parameters\n",
                   static_cast<long long>(figures.averaged));
    else
      std::fprintf(stderr, "kept the parameters of step %lld (best dev %s)\n",
                   static_cast<long long>(figures.best_step), best_shown(end.best_score).c_str());
  }
  if (!o.curve.empty()) write_curve(o.curve, run);
  return figures;
}

}  // namespace ag::translate::program
