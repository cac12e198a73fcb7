// Tutorial 11 — Training with attention.
//
// A tiny retrieval task learned end to end: each example has 8 keys with a
// value each, and a query that is a disguised copy of one key. The model must
// learn to see through the disguise, put its weight on the matching key and
// return that key's value. Two learned projections, scaled dot-product
// attention, mean squared error, Adam.
//
// Legend: B batch, T = 8 key-value pairs, d = 8 key width, v = 4 value width.
//
// Run: build/tutorial_11_training [--no-pause] [--out DIR]
#include <algorithm>
#include <cmath>
#include <iostream>

#include "tutorial.h"

namespace {

const int64_t T = 8, d = 8, v = 4;

// One batch of the task.
struct Batch {
  ag::Tensor queries;  // [B, 1, d]
  ag::Tensor keys;     // [B, T, d]
  ag::Tensor values;   // [B, T, v]
  ag::Tensor target;   // [B] int64: which key the query copies
  ag::Tensor answer;   // [B, 1, v]: that key's value
};

// one_hot(target)[b, j] = 1 where j == target[b], else 0: int64 [B] -> [B, T].
ag::Tensor one_hot(const ag::Tensor& target) {
  const ag::Tensor positions = ag::unsqueeze(ag::arange(T, ag::kInt64), 0);  // [1, T]
  return ag::eq(ag::unsqueeze(target, 1), positions).to(ag::kFloat32);
}

// Examples whose query is key `target` seen through the fixed matrix
// `disguise` [d, d], plus a little noise. target: int64 [B].
Batch make_batch(const ag::Tensor& target, const ag::Tensor& disguise) {
  const int64_t B = target.size(0);
  Batch batch;
  // Keys of one length, sqrt(d): with the disguise undone, a query's dot product
  // is then largest with its own key (cos < 1 for the others), never with a
  // longer one (tutorial 6: dot products favour long keys).
  const ag::Tensor directions = ag::randn({B, T, d});
  batch.keys =
      directions / ag::sqrt(ag::sum(directions * directions, -1, true)) * std::sqrt(double(d));
  batch.values = ag::randn({B, T, v});
  batch.target = target;
  const ag::Tensor pick = ag::unsqueeze(one_hot(target), 1);  // [B, 1, T]: a bmm picks a row
  const ag::Tensor chosen_key = ag::bmm(pick, batch.keys);    // [B, 1, d]
  batch.queries = ag::matmul(chosen_key, disguise) + 0.1 * ag::randn({B, 1, d});
  batch.answer = ag::bmm(pick, batch.values);  // [B, 1, v]
  return batch;
}

Batch random_batch(int64_t B, const ag::Tensor& disguise) {
  return make_batch((ag::rand({B}) * double(T)).to(ag::kInt64), disguise);
}

// The model: project queries and keys, then scaled dot-product attention
// over the (unprojected) values.
struct Retriever {
  ag::nn::Linear W_q{d, d, /*bias=*/false};
  ag::nn::Linear W_k{d, d, /*bias=*/false};
  ag::nn::DotProductAttention attention;

  ag::Tensor operator()(const Batch& batch) {
    return attention(W_q(batch.queries), W_k(batch.keys), batch.values);  // [B, 1, v]
  }
  std::vector<ag::Tensor> parameters() const { return {W_q.weight, W_k.weight}; }
};

// Fraction of examples whose largest weight is on the right key.
double accuracy(const ag::Tensor& weights, const ag::Tensor& target) {
  const ag::Tensor picked = ag::reshape(ag::argmax(weights.detach(), -1), {-1});  // [B]
  return ag::mean(ag::eq(picked, target).to(ag::kFloat32)).item();
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 11, "Training with attention");
  ag::manual_seed(11);

  t.step("The task",
         "Each example: 8 random keys [8, 8], all of length sqrt(8) so that none wins by "
         "being long, with random values [8, 4], and a query that "
         "is one of the keys in disguise (its features shuffled and every other one negated, "
         "the same way for every example) plus a little noise. The right output is the chosen "
         "key's value. Plain dot-product "
         "attention of the query against the keys cannot find the key: the disguise "
         "scrambles the directions.");
  // The disguise shuffles the 8 features and flips the sign of every other one:
  // query[perm[i]] = +-key[i]. It scrambles directions but loses nothing.
  const std::vector<int64_t> perm = {3, 7, 0, 5, 1, 6, 2, 4};
  std::vector<double> entries(d * d, 0.0);
  for (int64_t i = 0; i < d; ++i) entries[i * d + perm[i]] = i % 2 == 0 ? 1.0 : -1.0;
  const ag::Tensor disguise = ag::tensor(entries, {d, d});  // [d, d]: query = key @ disguise
  // A fixed batch for the before/after pictures: example i copies key i, so the
  // right weights form the diagonal.
  const Batch shown = make_batch(ag::arange(T, ag::kInt64), disguise);
  t.show("key 0 of example 0", ag::narrow(ag::narrow(shown.keys, 0, 0, 1), 1, 0, 1));
  t.show("the query of example 0: key 0 disguised", ag::narrow(shown.queries, 0, 0, 1));
  t.show("its answer (value of key 0)", ag::narrow(shown.answer, 0, 0, 1));

  t.step("The model and its first guesses",
         "Two learned projections, W_q and W_k [8, 8], then scaled dot-product attention: "
         "score(q, k_j) = (W_q q) . (W_k k_j) / sqrt(8). Trained, W_q^T W_k can undo the "
         "disguise and make the right key's score stand out. Untrained, the weights "
         "are spread over all keys.");
  Retriever model;
  ag::Tensor before;
  {
    ag::NoGradGuard no_grad;
    model(shown);
    before = model.attention.attention_weights().detach().clone();  // [8, 1, 8]
  }
  t.show("weights of the 8 shown examples, before training", ag::reshape(before, {T, T}));
  // Example i copies key i: its right weight is entry (i, i).
  const ag::Tensor diagonal = one_hot(ag::arange(T, ag::kInt64));  // [T, T] identity
  const auto on_right_key = [&](const ag::Tensor& w) {
    return ag::sum(ag::reshape(w, {T, T}) * diagonal).item() / double(T);
  };
  // 1000 examples never trained on, to measure the loss and the accuracy.
  const Batch test = random_batch(1000, disguise);
  const auto evaluate = [&](double& loss, double& right_key) {
    ag::NoGradGuard no_grad;
    loss = ag::mse_loss(model(test), test.answer).item();
    right_key = accuracy(model.attention.attention_weights(), test.target);
  };
  double loss_before, accuracy_before;
  evaluate(loss_before, accuracy_before);
  std::cout << "On 1000 new examples: loss " << tut::num(loss_before, "%.4f") << ", right key "
            << tut::num(100 * accuracy_before, "%.1f") << "% (chance: 12.5%)\n";
  t.check("the untrained weights are near uniform: about 1/8 on the right key",
          std::abs(on_right_key(before) - 1.0 / T) < 0.05, tut::num(on_right_key(before), "%.3f"));
  {
    // The task's premise: without projections, the disguised query's largest
    // dot product is with its own key no more often than with any other. By
    // loops, no attograd op: argmax_j q . k_j for each of the 1000 examples.
    // Chance is 1/8; 1000 examples give it a standard error of 1.05 points.
    // Seeds 1-11 gave 9.3-12.6%, at or a little under chance.
    const std::vector<double> qs = test.queries.to_vector(), ks = test.keys.to_vector(),
                              targets = test.target.to_vector();
    int right = 0;
    for (size_t b = 0; b < targets.size(); ++b) {
      size_t best = 0;
      double best_score = -1e300;
      for (size_t j = 0; j < T; ++j) {
        double score = 0;
        for (size_t x = 0; x < d; ++x) score += qs[b * d + x] * ks[(b * T + j) * d + x];
        if (score > best_score) best_score = score, best = j;
      }
      right += best == static_cast<size_t>(targets[b]);
    }
    const double plain_accuracy = right / double(targets.size());
    t.check(
        "plain dot products cannot find the key: right no more often than chance (12.5%) + 4 "
        "points",
        plain_accuracy < 1.0 / T + 0.04, tut::num(100 * plain_accuracy, "%.1f") + "% right");
  }

  t.step("Train",
         "400 steps of Adam (learning rate 0.02) on fresh batches of 64 examples, "
         "minimising the mean squared error between the output and the right value. A "
         "progress line every 50 steps: the loss averaged over the last 50 steps and "
         "how often the largest weight is on the right key.");
  ag::optim::Adam optimizer(model.parameters(), /*lr=*/0.02);
  const int steps = 400, report_every = 50;
  double window_loss = 0, window_accuracy = 0;
  for (int step = 1; step <= steps; ++step) {
    const Batch batch = random_batch(64, disguise);
    optimizer.zero_grad();
    const ag::Tensor loss = ag::mse_loss(model(batch), batch.answer);
    loss.backward();
    optimizer.step();
    window_loss += loss.item();
    window_accuracy += accuracy(model.attention.attention_weights(), batch.target);
    if (step % report_every == 0) {
      std::cout << "step " << tut::num(step, "%3.0f") << "/" << steps << "   loss "
                << tut::num(window_loss / report_every, "%.4f") << "   right key "
                << tut::num(100 * window_accuracy / report_every, "%5.1f") << "%" << std::endl;
      window_loss = window_accuracy = 0;
    }
  }

  t.step("After training",
         "The same 1000 new examples as before training, and the 8 shown examples: their "
         "weights should now lie on the diagonal (example i copies key i; the heatmap shows "
         "both, one row per example).");
  double loss_after, accuracy_after;
  evaluate(loss_after, accuracy_after);
  std::cout << "On 1000 new examples: loss " << tut::num(loss_after, "%.4f") << ", right key "
            << tut::num(100 * accuracy_after, "%.1f") << "%\n";
  // Over seeds 1-11 (the model, the data and the batches all drawn from the
  // seed): loss 0.82-0.96 -> 0.0007-0.0027, right key 100% every time, the
  // shown examples' mean weight 0.951-0.999, and D W_q^T W_k's smallest
  // diagonal entry 4.85-5.08 against the largest other 0.27-0.41.
  t.check("the loss on new examples falls by two orders of magnitude",
          loss_after < 0.01 * loss_before,
          tut::num(loss_before, "%.4f") + " -> " + tut::num(loss_after, "%.4f"));
  t.check("the right key gets the largest weight in over 95% of new examples",
          accuracy_after > 0.95, tut::num(100 * accuracy_after, "%.1f") + "%");
  ag::Tensor after;
  {
    ag::NoGradGuard no_grad;
    model(shown);
    after = model.attention.attention_weights().detach().clone();  // [8, 1, 8]
  }
  t.show("weights of the 8 shown examples, after training", ag::reshape(after, {T, T}));
  {
    // The trained model is still attention: its output by loops (tutorial.h),
    // from its two weight matrices and no attograd op.
    ag::NoGradGuard no_grad;
    const double model_diff = tut::max_abs_diff(
        model(shown), tut::attention_by_loops(tut::linear_by_loops(shown.queries, model.W_q.weight),
                                              tut::linear_by_loops(shown.keys, model.W_k.weight),
                                              shown.values, 1 / std::sqrt(double(d)))
                          .output);
    t.check("the trained model's output is softmax((W_q q) . (W_k k) / sqrt(8)) V, by loops",
            model_diff < 1e-5, "max |difference| " + tut::num(model_diff));
  }
  t.say(
      "How the projections undo the disguise: with row vectors, the query is k D (D the "
      "disguise), so the score of key k' is k D W_q^T W_k k'^T / sqrt(8). For keys of one "
      "length it is largest at k' = k when D W_q^T W_k is a multiple of the identity. From "
      "the trained weights, by loops:");
  const std::vector<double> D = disguise.to_vector(), Wq = model.W_q.weight.to_vector(),
                            Wk = model.W_k.weight.to_vector();
  std::vector<double> undo(d * d, 0.0);  // D W_q^T W_k by loops
  for (size_t i = 0; i < d; ++i)
    for (size_t j = 0; j < d; ++j)
      for (size_t a = 0; a < d; ++a)
        for (size_t c = 0; c < d; ++c)
          undo[i * d + j] += D[i * d + a] * Wq[c * d + a] * Wk[c * d + j];
  double least_diagonal = 1e300, largest_off = 0;
  for (size_t i = 0; i < d; ++i)
    for (size_t j = 0; j < d; ++j)
      if (i == j)
        least_diagonal = std::min(least_diagonal, undo[i * d + j]);
      else
        largest_off = std::max(largest_off, std::abs(undo[i * d + j]));
  t.show("D W_q^T W_k, by loops", ag::tensor(undo, {d, d}));
  t.check(
      "D W_q^T W_k is nearly a multiple of the identity: each diagonal entry over 5x every other "
      "entry",
      least_diagonal > 5 * largest_off,
      "smallest diagonal " + tut::num(least_diagonal, "%.2f") + ", largest other " +
          tut::num(largest_off, "%.2f"));
  t.check("the shown examples' mean weight on the right key grows to over 0.8",
          on_right_key(after) > 0.8,
          tut::num(on_right_key(before), "%.3f") + " -> " + tut::num(on_right_key(after), "%.3f"));
  ag::viz::HeatmapOptions options;
  options.titles = {"before training", "after training"};
  options.ylabel = "Example";
  t.heatmap("weights_before_after", ag::reshape(ag::stack({before, after}), {1, 2, T, T}), options);

  t.step("Summary",
         "The whole attention stack is differentiable: the loss's gradient flows through "
         "the weighted sum, the softmax and the scores into W_q and W_k, and Adam turns it "
         "into projections that undo the disguise.\n"
         "In the viewer: attograd-viewer --scene training trains a model like this one "
         "live (its retrieval task), with the weights updating every frame.\n"
         "Next: tutorial_12_scoring_functions.");
  return t.finish();
}
