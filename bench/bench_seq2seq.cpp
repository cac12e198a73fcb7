// One training step of d2l's seq2seq with attention ("Bahdanau Attention"),
// float32, one thread, at two sizes:
//   seq2seq/train_step/additive   d2l's sizes and the shapes of
//                                 attograd-translate's dates task: batch 64,
//                                 embedding 32, hidden 32, 2 GRU layers,
//                                 dropout 0.1, source 30 steps (vocabulary 64),
//                                 target 11 steps (vocabulary 15)
//   seq2seq/train_step/dot        the same with DotProductAttention
//   seq2seq/train_step/g2p        attograd-translate --task g2p's default
//                                 model: Bahdanau et al.'s bidirectional
//                                 encoder, embedding 128, hidden 256, 2 GRU
//                                 layers, dropout 0.1, batch 128, a CMUdict
//                                 batch's shapes (cut to its longest word:
//                                 14 letters and <eos> of 31 symbols, 13
//                                 phonemes and <eos> of 43)
//   seq2seq/train_step/transformer  d2l's Transformer (d = 32, FFN 64, 4
//                                 heads, 2 blocks, dropout 0.1) on the dates
//                                 task's batch
// (bench/training_steps.h has the steps.) scripts/bench_seq2seq_torch.py and
// scripts/bench_g2p_torch.py time the same steps with the PyTorch twins
// against attograd-translate; docs/seq2seq.md and docs/g2p.md ("Speed") have
// the figures.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "attograd/kernels/gemm.h"
#include "attograd/kernels/instruction_set.h"
#include "training_steps.h"

namespace {

using ag::bench::StepShape;

// The process's minor page faults so far: a step that reuses its buffers
// makes none once the allocator's cache holds them.
int64_t minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

void run_steps(benchmark::State& state, ag::bench::TrainingStep& step) {
  step.run();  // sizes the buffers
  const int64_t faults_before = minor_page_faults();
  for (auto _ : state) benchmark::DoNotOptimize(step.run());
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["page_faults_per_step"] =
      static_cast<double>(minor_page_faults() - faults_before) /
      static_cast<double>(state.iterations());
}

void train_step(benchmark::State& state, const StepShape& shape, const std::string& scoring) {
  ag::bench::TrainingStep step(shape, scoring);
  run_steps(state, step);
}

void transformer_step(benchmark::State& state) {
  ag::bench::TrainingStep step(ag::bench::kDates);
  run_steps(state, step);
}

}  // namespace

int main(int argc, char** argv) {
  ag::set_num_threads(1);
  // Which kernels ran: the best this CPU has, or ATTOGRAD_ISA's
  // (attograd/kernels/instruction_set.h).
  const char* set = ag::kernels::instruction_set_name(ag::kernels::instruction_set());
  std::printf("attograd: instruction set %s, gemm kernel %s\n", set, ag::kernels::gemm_path_name());
  benchmark::AddCustomContext("attograd_instruction_set", set);
  benchmark::RegisterBenchmark("seq2seq/train_step/additive", train_step, ag::bench::kDates,
                               std::string("additive"))
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("seq2seq/train_step/dot", train_step, ag::bench::kDates,
                               std::string("dot"))
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("seq2seq/train_step/g2p", train_step, ag::bench::kG2p,
                               std::string("additive"))
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("seq2seq/train_step/transformer", transformer_step)
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
