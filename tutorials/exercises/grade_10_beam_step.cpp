// Grades exercise 10 (starters/10_beam_step.cpp): beam_step on a worked
// example (a vocabulary A, B, C, <eos> and two beams), on ties, on a larger
// random step against every extension sorted, and on bad input.
#include <algorithm>
#include <cmath>
#include <string>

#include "exercises.h"
#include "grader.h"

namespace {

std::string choice_str(const ex::BeamChoice& c) {
  return "(log P " + ex::value_str(c.log_prob) + ", beam " + std::to_string(c.beam) + ", token " +
         std::to_string(c.token) + ")";
}

// Compares the learner's choices with the expected ones, in order.
void same_choices(ex::Grader& g, const std::string& what,
                  const std::function<std::vector<ex::BeamChoice>()>& got,
                  const std::vector<ex::BeamChoice>& expected, const std::string& hint) {
  std::vector<ex::BeamChoice> result;
  if (!g.run<std::vector<ex::BeamChoice>>(what, got, result, hint)) return;
  if (result.size() != expected.size()) {
    g.require(what, false,
              "expected " + std::to_string(expected.size()) + " choices, got " +
                  std::to_string(result.size()),
              hint);
    return;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const ex::BeamChoice &a = result[i], &b = expected[i];
    if (a.beam != b.beam || a.token != b.token || std::fabs(a.log_prob - b.log_prob) > 1e-12) {
      g.require(what, false,
                "choice " + std::to_string(i + 1) + ": expected " + choice_str(b) + ", got " +
                    choice_str(a),
                hint);
      return;
    }
  }
  g.require(what, true, "", hint);
}

}  // namespace

int main() {
  ex::Grader g(10, "one step of beam search",
               "translate/src/predict.cpp (beam_search, its extension step)");
  const std::string all_extensions =
      "an extension's log P is s_b + log P(v | beam b), and the step keeps the best of all "
      "K * V extensions: two may extend the same beam, and a beam may get none";

  // Beams "A" (P 0.5) and "C" (P 0.4); tokens A, B, C, <eos>. By hand:
  // A then B 0.5 * 0.4 = 0.2, A then C 0.5 * 0.35 = 0.175, C then B 0.4 * 0.4 = 0.16.
  const ag::Tensor beams = ag::tensor({std::log(0.5), std::log(0.4)}, {2}, ag::kFloat64);
  const ag::Tensor next =
      ag::log(ag::tensor({0.1, 0.4, 0.35, 0.15, 0.25, 0.4, 0.25, 0.1}, {2, 4}, ag::kFloat64));
  same_choices(
      g, "two beams, keep 2: AB (0.2) and AC (0.175), both extending A",
      [&] { return ex::beam_step(beams, next, 2); },
      {{std::log(0.5) + std::log(0.4), 0, 1}, {std::log(0.5) + std::log(0.35), 0, 2}},
      all_extensions);
  same_choices(
      g, "keep 3: then CB (0.16)", [&] { return ex::beam_step(beams, next, 3); },
      {{std::log(0.5) + std::log(0.4), 0, 1},
       {std::log(0.5) + std::log(0.35), 0, 2},
       {std::log(0.4) + std::log(0.4), 1, 1}},
      all_extensions + "; keep as many as beam_size asks, up to K * V");

  // Ties: every extension equally likely.
  const ag::Tensor flat = ag::zeros({3, 3}, ag::kFloat64), zero = ag::zeros({3}, ag::kFloat64);
  same_choices(
      g, "ties: equal log P go to the lower beam, then the lower token",
      [&] { return ex::beam_step(zero, flat, 4); }, {{0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {0, 1, 0}},
      "sort by log P, highest first; among equals, by beam, then by token");

  // A larger step, against every extension sorted.
  const ag::Tensor s = ex::uniform({3}, 70), p = ag::log_softmax(ex::uniform({3, 7}, 71), -1);
  std::vector<ex::BeamChoice> every;
  const std::vector<double> sv = ex::values(s), pv = ex::values(p);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t v = 0; v < 7; ++v) every.push_back({sv[b] + pv[b * 7 + v], b, v});
  std::stable_sort(
      every.begin(), every.end(),
      [](const ex::BeamChoice& x, const ex::BeamChoice& y) { return x.log_prob > y.log_prob; });
  every.resize(5);
  same_choices(
      g, "three beams, seven tokens, keep 5", [&] { return ex::beam_step(s, p, 5); }, every,
      all_extensions);

  g.throws(
      "next_log_probs [3, 7] for 2 beams is an error", [&] { ex::beam_step(beams, p, 2); },
      "beam_step",
      "check that next_log_probs is [K, V] with K the beams' count, and throw ag::Error "
      "naming beam_step and both shapes");
  std::vector<ex::BeamChoice> topk;
  const std::vector<double> values = ex::values(ex::fixture("ex10.log_probs")),
                            beam_of = ex::values(ex::fixture("ex10.beams")),
                            token_of = ex::values(ex::fixture("ex10.tokens"));
  for (size_t i = 0; i < values.size(); ++i) {
    topk.push_back(
        {values[i], static_cast<int64_t>(beam_of[i]), static_cast<int64_t>(token_of[i])});
  }
  same_choices(
      g, "PyTorch's numbers: torch.topk over every extension, keep 4",
      [] {
        return ex::beam_step(ex::fixture("ex10.beam_log_probs"), ex::fixture("ex10.next_log_probs"),
                             4);
      },
      topk, all_extensions);
  return g.finish();
}
