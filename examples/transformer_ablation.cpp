// transformer_ablation — why the decoder needs its look-ahead mask.
//
// Two Transformers (make_transformer's defaults: d 32, FFN 64, 4 heads, 2
// blocks, dropout 0.1) learn to reverse strings of 3 to 8 digits, one with
// the look-ahead mask and one without, for the same CPU time on one thread.
// Without the mask, step s of the teacher-forced target sees the token it
// must predict (the input at step s + 1), so its training loss falls below
// the masked model's; at prediction the decoder is fed its own outputs one
// at a time and that token is not there yet, so it fails. The program prints
// both training losses and both held-out exact-match accuracies (greedy,
// one step at a time with the key/value cache).
//
// Run: build/transformer_ablation [CPU seconds per model, default 60]
#include <attograd/attograd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <random>
#include <set>
#include <vector>

namespace {

constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kFirstDigit = 3, kVocab = 13, kSteps = 10;

using Digits = std::vector<int64_t>;

// One batch, d2l's layout: src = digits <eos> <pad>..., tgt_in = <bos> reversed,
// labels = reversed <eos>; the valid lengths count the <eos>.
struct Batch {
  ag::Tensor src, src_lens, tgt_in, labels, tgt_lens;
};

Batch make_batch(const std::vector<Digits>& sources) {
  const int64_t B = static_cast<int64_t>(sources.size());
  std::vector<double> src(B * kSteps, kPad), tgt_in(B * kSteps, kPad), labels(B * kSteps, kPad);
  std::vector<double> lens(B);
  for (int64_t b = 0; b < B; ++b) {
    const Digits& s = sources[static_cast<size_t>(b)];
    const int64_t n = static_cast<int64_t>(s.size());
    double* row_src = &src[b * kSteps];
    double* row_in = &tgt_in[b * kSteps];
    double* row_label = &labels[b * kSteps];
    row_in[0] = kBos;
    for (int64_t i = 0; i < n; ++i) {
      row_src[i] = s[i];
      row_label[i] = row_in[i + 1] = s[n - 1 - i];
    }
    row_src[n] = row_label[n] = kEos;
    lens[b] = n + 1;
  }
  const ag::Tensor l = ag::tensor(lens, {B}, ag::kInt64);
  return {ag::tensor(src, {B, kSteps}, ag::kInt64), l, ag::tensor(tgt_in, {B, kSteps}, ag::kInt64),
          ag::tensor(labels, {B, kSteps}, ag::kInt64), l};
}

// n random digit strings, none of them in `excluded` (the held-out set).
std::vector<Digits> sample(std::mt19937& rng, int n, const std::set<Digits>& excluded = {}) {
  std::vector<Digits> out;
  while (static_cast<int>(out.size()) < n) {
    Digits s(3 + rng() % 6);
    for (int64_t& d : s) d = kFirstDigit + static_cast<int64_t>(rng() % 10);
    if (!excluded.count(s)) out.push_back(std::move(s));
  }
  return out;
}

double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

struct Result {
  int steps;
  double loss_per_token, accuracy;
};

// Trains for `seconds` of CPU time (batches of 64 strings not in held_out,
// Adam 0.005, gradients clipped to norm 1), then decodes `held_out` greedily.
Result run(bool causal, double seconds, const std::vector<Digits>& held_out) {
  const std::set<Digits> excluded(held_out.begin(), held_out.end());
  ag::manual_seed(0);
  std::mt19937 rng(1);
  auto model = ag::nn::make_transformer(kVocab, kVocab);
  model->transformer_decoder().causal = causal;
  model->set_need_weights(false);  // nothing is drawn: stream wherever dropout allows
  ag::optim::Adam adam(model->parameters(), 0.005);
  Result result{0, 0, 0};
  const double start = cpu_seconds();
  while (cpu_seconds() - start < seconds) {
    const Batch b = make_batch(sample(rng, 64, excluded));
    model->train();
    const ag::Tensor loss = ag::sum(ag::nn::masked_softmax_ce_loss(
        (*model)(b.src, b.tgt_in, b.src_lens), b.labels, b.tgt_lens));
    adam.zero_grad();
    loss.backward();
    ag::nn::clip_grad_norm_(model->parameters(), 1.0);
    adam.step();
    // masked_softmax_ce_loss averages over all kSteps: per valid token instead
    const double per_token = loss.item() * kSteps / ag::sum(b.tgt_lens).item();
    result.loss_per_token =
        result.steps == 0 ? per_token : 0.98 * result.loss_per_token + 0.02 * per_token;
    ++result.steps;
  }

  ag::NoGradGuard no_grad;
  model->eval();
  const Batch b = make_batch(held_out);
  ag::nn::DecoderState state =
      model->decoder().init_state(model->encoder().forward(b.src, b.src_lens), b.src_lens);
  ag::Tensor token = ag::full({b.src.size(0), 1}, kBos, ag::kInt64);
  std::vector<Digits> outputs(held_out.size());
  std::vector<bool> ended(held_out.size(), false);
  for (int64_t step = 0; step < kSteps; ++step) {
    token = ag::argmax(model->decoder().forward(token, state), 2);  // [B, 1]
    const std::vector<double> next = token.to_vector();
    for (size_t i = 0; i < held_out.size(); ++i) {
      if (ended[i]) continue;
      if (next[i] == kEos)
        ended[i] = true;
      else
        outputs[i].push_back(static_cast<int64_t>(next[i]));
    }
  }
  int correct = 0;
  for (size_t i = 0; i < held_out.size(); ++i) {
    Digits reversed(held_out[i].rbegin(), held_out[i].rend());
    correct += ended[i] && outputs[i] == reversed;
  }
  result.accuracy = static_cast<double>(correct) / static_cast<double>(held_out.size());
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 60;
  ag::set_num_threads(1);
  std::mt19937 held_rng(12345);
  const std::vector<Digits> held_out = sample(held_rng, 1000);
  std::printf("reverse 3-8 digits, %.0f CPU seconds per model, one thread\n", seconds);
  for (const bool causal : {true, false}) {
    const Result r = run(causal, seconds, held_out);
    std::printf("%-22s %5d steps, training loss %.4f per token, held-out exact match %.1f%%\n",
                causal ? "with look-ahead mask" : "without (ablation)", r.steps, r.loss_per_token,
                100 * r.accuracy);
  }
}
