// Tutorial 16 — Beam search.
//
// d2l's section "Beam Search": greedy search keeps the one most probable
// token at every step, exhaustive search scores every sequence, beam search
// keeps the K most probable sequences so far. First d2l's worked example
// (the vocabulary A, B, C, <eos> and the conditional probabilities of its
// two figures: greedy's 0.048 against the better sequence's 0.054), by hand
// and through the library's beam search, fed by a tiny decoder that returns
// the figures' probabilities: the K = 2 beam after every step, checked
// against the figure; d2l's ranking rule taken literally beside the
// library's (which counts <eos> in L and ranks only finished candidates);
// exhaustive search over that tree equals beam search with K large enough.
// Then the shipped letters-to-sounds model (translate/models/g2p-cmudict.npz)
// on 200 test words drawn across the alphabet: greedy against beam K = 1, 2,
// 5, 10, how many sequences each scores, how often the answer changes, the
// exact match of each, greedy's and the beam's alignments of a word they
// answer differently, and what the length normalisation's exponent alpha
// does to short and long answers.
//
// Legend: B inputs, K beam size, V target vocabulary, R rows of one decoder
// call (the kept sequences of all inputs), L an answer's length with <eos>.
//
// Run: build/tutorial_16_beam_search [--no-pause] [--out DIR]
#include <attograd/translate/predict.h>
#include <attograd/translate/report.h>
#include <attograd/translate/train.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "tutorial.h"
#include "tutorial_16_models.h"

namespace {

using namespace tutorial16;  // the models (tutorial_16_models.h)

std::string phonemes(const tr::Translator& translator, const std::vector<int64_t>& output) {
  return tr::detokenize(translator.tgt_vocab.tokens(output), tr::Tokenization::Phonemes);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// How many test words the trained-model steps decode: N of the test split,
// drawn with a fixed seed so that they spread across the alphabet (the first
// N in dictionary order would all begin with "a"). Under the sanitizers
// (~10x slower) the first 24 in dictionary order, so the pass stays short:
// among them some answers lengthen with alpha, which 24 drawn at random need
// not show; every check but the alphabet's runs on them.
#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t kWords = 24;
#else
constexpr int64_t kWords = 200;
#endif

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 16, "Beam search");
  ag::set_num_threads(1);  // the same numbers on every machine, and the minute's budget

  t.step("Greedy search, by hand",
         "d2l's figures: the output vocabulary is A, B, C and <eos>; each column of a figure "
         "is the decoder's distribution over the next token given the tokens so far. Greedy "
         "search takes the most probable token at every step and stops at <eos>. The "
         "sequence's probability is the product of the chosen tokens' conditional "
         "probabilities.");
  std::cout << "  prefix    P(A)  P(B)  P(C)  P(<eos>)\n";
  for (const std::string& prefix : std::vector<std::string>{"", "A", "AB", "ABC", "AC", "ACB"}) {
    const std::array<double, 4> p = figure_probs(prefix);
    std::cout << "  " << (prefix.empty() ? std::string("(none)") : prefix)
              << std::string(10 - (prefix.empty() ? 6 : prefix.size()), ' ');
    for (double q : p) std::cout << tut::num(q, "%.1f") << "   ";
    std::cout << "\n";
  }
  std::string greedy_by_hand;
  double greedy_p = 1;
  std::string factors;
  for (int step = 0; step < 4; ++step) {
    const std::array<double, 4> p = figure_probs(greedy_by_hand);
    const auto best = static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
    greedy_p *= p[best];
    factors += (step ? " * " : "") + tut::num(p[best], "%.1f");
    if (best == 3) break;
    greedy_by_hand += "ABC"[best];
  }
  std::cout << "greedy: " << greedy_by_hand << " <eos>, P = " << factors << " = "
            << tut::num(greedy_p, "%.3f") << "\n";
  const double second_p =
      figure_probs("")[0] * figure_probs("A")[2] * figure_probs("AC")[1] * figure_probs("ACB")[3];
  std::cout << "the second figure's A C B <eos>: P = 0.5 * 0.3 * 0.6 * 0.6 = "
            << tut::num(second_p, "%.3f") << "\n";
  t.check("greedy picks A B C <eos>, P = 0.048",
          greedy_by_hand == "ABC" && std::abs(greedy_p - 0.048) < 1e-12,
          tut::num(greedy_p, "%.6f"));
  t.check("A C B <eos> is more probable: P = 0.054",
          std::abs(second_p - 0.054) < 1e-12 && second_p > greedy_p, tut::num(second_p, "%.6f"));
  t.say(
      "Taking C (0.3) instead of B (0.4) at step 2 changes what step 3 is conditioned on: "
      "after A C the decoder is sure of B (0.6). A choice that looks worse now can lead "
      "somewhere better; greedy search never looks back.");

  ag::nn::EncoderDecoder toy(std::make_unique<FigureEncoder>(), std::make_unique<FigureDecoder>());
  const ag::Tensor toy_src =
      ag::tensor({double(tr::Vocab::kEos)}, {1, 1}, ag::kInt64);  // [B = 1, T = 1]
  const ag::Tensor toy_len = ag::tensor({1.0}, {1}, ag::kInt64);

  t.step("The figures as a decoder, through the library",
         "The library's predict_seq2seq and beam_search take any encoder-decoder model. A "
         "decoder whose logits are log P(token | prefix) from the figures makes them search "
         "d2l's tree: its softmax gives back exactly the figures' numbers. Its state is the "
         "prefix so far (one number per kept sequence, which beam search's select_state "
         "copies and reorders like a GRU's hidden state). At most 4 output steps, as in the "
         "figures.");
  const std::vector<tr::Prediction> greedy = tr::predict_seq2seq(toy, toy_src, toy_len, 4);
  std::cout << "predict_seq2seq (greedy): " << sequence_str(greedy[0].output, greedy[0].finished)
            << "\n";
  const auto beam1 = tr::beam_search(toy, toy_src, toy_len, 4, {1, 0.75});
  std::cout << "beam_search, K = 1: " << sequence_str(beam1[0][0].output, beam1[0][0].finished)
            << ", P = " << tut::num(std::exp(beam1[0][0].log_prob), "%.3f") << "\n";
  t.check("the library's greedy search is ours: A B C <eos>",
          greedy[0].output == std::vector<int64_t>{kA, kB, kC} && greedy[0].finished);
  t.check("beam search with K = 1 is greedy search, P = 0.048",
          beam1[0][0].output == greedy[0].output && beam1[0][0].finished &&
              std::abs(std::exp(beam1[0][0].log_prob) - 0.048) < 1e-12);

  t.step("Beam search, K = 2, step by step",
         "Keep the K = 2 most probable sequences. beam_search stopped after s steps returns "
         "the beam as it stands then (with alpha = 0 its candidates are ranked by log P "
         "alone), so each step's beam can be printed and checked against d2l's figure.");
  uncovered_prefixes().clear();
  // What d2l's second figure keeps after each step: the sequences and their P.
  const std::vector<std::vector<std::pair<std::string, double>>> expected = {
      {{"A (no <eos>)", 0.5}, {"B (no <eos>)", 0.2}},
      {{"A B (no <eos>)", 0.2}, {"A C (no <eos>)", 0.15}},
      {{"A C B (no <eos>)", 0.09}, {"A B C (no <eos>)", 0.08}},
      {{"A C B <eos>", 0.054}, {"A B C <eos>", 0.048}}};
  bool steps_agree = true;
  std::vector<tr::BeamCandidate> seen;  // every sequence the beam kept, at any step
  for (int64_t steps = 1; steps <= 4; ++steps) {
    const auto beam = tr::beam_search(toy, toy_src, toy_len, steps, {2, 0.0})[0];
    std::cout << "  after step " << steps << ":";
    for (size_t k = 0; k < beam.size(); ++k) {
      const tr::BeamCandidate& c = beam[k];
      std::cout << "   " << sequence_str(c.output, c.finished) << " (P "
                << tut::num(std::exp(c.log_prob), "%.3f") << ", log P "
                << tut::num(c.log_prob, "%.4f") << ")";
      const auto& want = expected[size_t(steps - 1)];
      steps_agree = steps_agree && beam.size() == want.size() &&
                    sequence_str(c.output, c.finished) == want[k].first &&
                    std::abs(std::exp(c.log_prob) - want[k].second) < 1e-12;
      seen.push_back(c);
    }
    std::cout << "\n";
  }
  std::string uncovered;
  for (const std::string& prefix : uncovered_prefixes())
    uncovered += (uncovered.empty() ? "" : ", ") + prefix;
  std::cout << "prefixes the figures give no probabilities for, asked on the way: " << uncovered
            << " (each set to 1/4 for A, B, C and <eos>)\n";
  t.check("each step's beam is d2l's: A, B; A B, A C; A C B, A B C; A C B <eos>, A B C <eos>",
          steps_agree);
  t.check(
      "the figures leave out only B's probabilities on this search (step 1 kept B: its "
      "0.2 ties C's and the lower index wins)",
      uncovered == "B");

  t.step("Ranking the candidates: d2l's rule, and the library's",
         "d2l ranks every sequence the beam kept (A, B, A B, ... with what follows <eos> cut "
         "off) by log P / L^alpha, L its length. Taken literally, that lets a sequence that "
         "never ended win: here A, one token. The library ranks only finished sequences (those "
         "that emitted <eos>; the others come after them, as ones that ran out of steps) and "
         "counts <eos> in L, since its probability is one of the factors of P.");
  std::cout << "  sequence            P       log P   d2l: L  log P / L^0.75   library: L  score\n";
  double d2l_best = -INFINITY, library_best = -INFINITY;
  std::string d2l_choice, library_choice;
  for (const tr::BeamCandidate& c : seen) {
    const auto d2l_length = double(c.output.size());
    const double d2l_score = c.log_prob / std::pow(d2l_length, 0.75);
    const double library_length = d2l_length + (c.finished ? 1 : 0);
    const double library_score = c.log_prob / std::pow(library_length, 0.75);
    const std::string name = sequence_str(c.output, c.finished);
    std::cout << "  " << name << std::string(name.size() < 18 ? 18 - name.size() : 1, ' ')
              << tut::num(std::exp(c.log_prob), "%.3f") << tut::num(c.log_prob, "%10.4f")
              << tut::num(d2l_length, "%7.0f") << tut::num(d2l_score, "%15.4f")
              << (c.finished ? tut::num(library_length, "%14.0f") + tut::num(library_score, "%9.4f")
                             : std::string("             -        -"))
              << "\n";
    if (d2l_score > d2l_best) d2l_best = d2l_score, d2l_choice = name;
    if (c.finished && library_score > library_best)
      library_best = library_score, library_choice = name;
  }
  const auto beam2 = tr::beam_search(toy, toy_src, toy_len, 4, {2, 0.75});
  std::cout << "d2l's rule, literally: " << d2l_choice << "; the library: " << library_choice
            << "; beam_search(K = 2, alpha = 0.75) answers "
            << sequence_str(beam2[0][0].output, beam2[0][0].finished) << "\n";
  t.check("d2l's literal rule would answer A, a sequence that never ended",
          d2l_choice == "A (no <eos>)");
  t.check("the library answers A C B <eos>, P = 0.054",
          library_choice == "A C B <eos>" &&
              beam2[0][0].output == std::vector<int64_t>{kA, kC, kB} && beam2[0][0].finished &&
              std::abs(std::exp(beam2[0][0].log_prob) - 0.054) < 1e-12,
          tut::num(std::exp(beam2[0][0].log_prob), "%.6f"));

  t.step("Exhaustive search, and beam search with K large enough",
         "Exhaustive search scores every sequence: here every way of ending in <eos> within 4 "
         "steps (1 + 3 + 9 + 27 = 40) and the 3^4 = 81 that run out of steps, 121 in all "
         "(d2l: O(|Y|^T') of them). Beam search whose K is at least the number of sequences "
         "never drops one, so it must agree with it sequence for sequence. (It also extends "
         "by <pad>, <bos> and <unk>, whose probability is 0; those have log P = -inf and are "
         "left out of the comparison.)");
  std::vector<Sequence> all;
  std::vector<int64_t> scratch;
  enumerate("", scratch, 0.0, 4, all);
  const auto score = [](const Sequence& s, double alpha) {
    return s.log_prob / std::pow(double(s.tokens.size() + s.finished), alpha);
  };
  std::map<std::pair<std::vector<int64_t>, bool>, double> exhaustive;  // P > 0 only
  const Sequence* best_p = nullptr;
  const Sequence* best_score = nullptr;
  for (const Sequence& s : all) {
    if (std::isinf(s.log_prob)) continue;
    exhaustive[{s.tokens, s.finished}] = s.log_prob;
    if (!s.finished) continue;
    if (!best_p || s.log_prob > best_p->log_prob) best_p = &s;
    if (!best_score || score(s, 0.75) > score(*best_score, 0.75)) best_score = &s;
  }
  std::string most_probable;  // every finished sequence of the largest P (ties to 1e-12)
  for (const Sequence& s : all)
    if (s.finished && std::abs(s.log_prob - best_p->log_prob) < 1e-12)
      most_probable += (most_probable.empty() ? "" : " and ") + sequence_str(s.tokens, true);
  std::cout << all.size() << " sequences, " << exhaustive.size() << " with P > 0\n"
            << "largest P:              " << most_probable
            << "   P = " << tut::num(std::exp(best_p->log_prob), "%.3f") << "\n"
            << "largest log P / L^0.75: " << sequence_str(best_score->tokens, true)
            << "   P = " << tut::num(std::exp(best_score->log_prob), "%.3f") << ", score "
            << tut::num(score(*best_score, 0.75), "%.4f") << "\n";
  t.check("exhaustive search scores 40 + 81 = 121 sequences", all.size() == 121u,
          std::to_string(all.size()));
  const auto beam_all = tr::beam_search(toy, toy_src, toy_len, 4, {1000, 0.75});
  std::map<std::pair<std::vector<int64_t>, bool>, double> by_beam;
  for (const tr::BeamCandidate& c : beam_all[0])
    if (!std::isinf(c.log_prob)) by_beam[{c.output, c.finished}] = c.log_prob;
  double worst = 0;
  bool same_sequences = by_beam.size() == exhaustive.size();
  for (const auto& [key, lp] : exhaustive) {
    const auto it = by_beam.find(key);
    if (it == by_beam.end()) {
      same_sequences = false;
    } else {
      worst = std::max(worst, std::abs(it->second - lp));
    }
  }
  t.check("beam search with K = 1000 keeps every sequence of P > 0, with exhaustive search's log P",
          same_sequences && worst < 1e-12,
          std::to_string(by_beam.size()) + " and " + std::to_string(exhaustive.size()) +
              " sequences, max |difference| " + tut::num(worst));
  t.check("and its best candidate is exhaustive search's: A C B <eos>",
          beam_all[0][0].output == best_score->tokens && beam_all[0][0].finished);
  t.say(
      "By probability alone the best answers are the shortest: <eos> at once (P = 0.1) and "
      "A <eos> (0.5 * 0.2 = 0.1). Every token multiplies in another factor below 1, so P "
      "favours short sequences; dividing log P by L^alpha lets longer ones compete (d2l's "
      "formula). With alpha = 0 there is no normalisation, and a beam wide enough to keep "
      "A <eos> (K >= 3) or <eos> itself (K >= 4) returns one of them:");
  std::cout << "  K   alpha 0                  alpha 0.75\n";
  double k4_alpha0_p = 0;
  size_t k4_alpha0_length = 0;
  for (int64_t K : {1, 2, 3, 4, 5}) {
    std::cout << "  " << K;
    for (double alpha : {0.0, 0.75}) {
      const auto b = tr::beam_search(toy, toy_src, toy_len, 4, {K, alpha});
      const std::string s = sequence_str(b[0][0].output, b[0][0].finished);
      if (K == 4 && alpha == 0.0) {
        k4_alpha0_p = std::exp(b[0][0].log_prob);
        k4_alpha0_length = b[0][0].output.size();
      }
      std::cout << "   " << s
                << (alpha == 0.0 ? std::string(std::max<size_t>(1, 22 - s.size()), ' ') : "");
    }
    std::cout << "\n";
  }
  t.check("alpha = 0 and K = 4 return a sequence of P = 0.1 with at most one token",
          std::abs(k4_alpha0_p - 0.1) < 1e-12 && k4_alpha0_length <= 1,
          "P = " + tut::num(k4_alpha0_p, "%.6f") + ", " + std::to_string(k4_alpha0_length) +
              " token(s)");

  // ---- the shipped letters-to-sounds model -------------------------------------------
  t.step("A trained model: letters to sounds",
         "The shipped model (translate/models/g2p-cmudict.npz: Bahdanau et al.'s bidirectional "
         "encoder, 3.1M parameters, V = 43: the reserved tokens and 39 phonemes) on " +
             std::to_string(kWords) + " test words of CMUdict " +
             (kWords >= 200 ? "drawn at random (seed 16) from the whole test split, so they "
                              "spread across the alphabet"
                            : "(a sanitizer build: the first in dictionary order)") +
             " (tutorial 17 reads the dictionary; these words were never trained on). A word "
             "is right when the output is any of its pronunciations.");
  const std::string model_path =
      (std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "translate/models/g2p-cmudict.npz").string();
  tr::Translator translator = tr::load_translator(model_path);
  translator.model->eval();
  int64_t parameter_count = 0;
  for (const ag::Tensor& p : translator.model->parameters()) parameter_count += p.numel();
  std::cout << "parameters: " << parameter_count << ", V = " << translator.tgt_vocab.size() << "\n";
  t.check("the model has 3.1M parameters and V = 43",
          std::abs(double(parameter_count) - 3.1e6) < 0.05e6 && translator.tgt_vocab.size() == 43,
          std::to_string(parameter_count) + ", " + std::to_string(translator.tgt_vocab.size()));
  const tr::TaskData dict = tr::cmudict_data(tr::kDefaultCmudictPath);
  std::vector<tr::Example> examples = dict.test;
  if (kWords >= 200) std::shuffle(examples.begin(), examples.end(), std::mt19937_64(16));
  examples.resize(kWords);
  std::set<char> first_letters;
  for (const tr::Example& e : examples) first_letters.insert(e.source[0]);
  std::cout << "the " << examples.size() << " words begin with " << first_letters.size()
            << " letters:";
  for (char letter : first_letters) std::cout << ' ' << letter;
  std::cout << "\n";
  if (kWords >= 200)
    t.check("the words spread across the alphabet (at least 15 first letters)",
            first_letters.size() >= 15u);
  std::vector<std::string> words;
  for (const tr::Example& e : examples) words.push_back(e.source);
  const auto [src, src_len] = sources(translator, words);
  CountedModel counting = counted(translator);
  const auto exact = [&](const std::vector<std::string>& outputs) {
    int64_t right = 0;
    for (size_t i = 0; i < outputs.size(); ++i) right += examples[i].accepts(outputs[i]);
    return double(right) / double(outputs.size());
  };

  auto start = std::chrono::steady_clock::now();
  const std::vector<tr::Prediction> g2p_greedy =
      tr::predict_seq2seq(*counting.model, src, src_len, translator.tgt_steps);
  const double greedy_seconds = seconds_since(start);
  std::vector<std::string> greedy_out;
  for (const tr::Prediction& p : g2p_greedy) greedy_out.push_back(phonemes(translator, p.output));
  const int64_t greedy_scored = counting.decoder->scored;
  std::cout << "  search     scored   decoder calls   answer != greedy's   exact match   seconds\n"
            << "  greedy " << tut::num(double(greedy_scored), "%10.0f")
            << tut::num(double(counting.decoder->calls), "%16.0f") << "                    -"
            << tut::num(100 * exact(greedy_out), "%13.1f") << "%"
            << tut::num(greedy_seconds, "%10.2f") << "\n";
  std::map<int64_t, std::vector<std::vector<tr::BeamCandidate>>> beams;
  std::map<int64_t, int64_t> scored, calls;
  std::map<int64_t, double> match;
  bool k1_is_greedy = true;
  for (int64_t K : {1, 2, 5, 10}) {
    counting.decoder->scored = counting.decoder->calls = 0;
    start = std::chrono::steady_clock::now();
    beams[K] = tr::beam_search(*counting.model, src, src_len, translator.tgt_steps, {K, 0.75});
    const double beam_seconds = seconds_since(start);
    std::vector<std::string> out;
    int64_t changed = 0;
    for (size_t i = 0; i < words.size(); ++i) {
      out.push_back(phonemes(translator, beams[K][i][0].output));
      changed += out.back() != greedy_out[i];
      if (K == 1 && (beams[K][i][0].output != g2p_greedy[i].output ||
                     beams[K][i][0].finished != g2p_greedy[i].finished))
        k1_is_greedy = false;
    }
    scored[K] = counting.decoder->scored;
    calls[K] = counting.decoder->calls;
    match[K] = exact(out);
    std::cout << "  beam " << std::to_string(K) << (K < 10 ? " " : "")
              << tut::num(double(scored[K]), "%11.0f")
              << tut::num(double(counting.decoder->calls), "%16.0f")
              << tut::num(double(changed), "%21.0f") << tut::num(100 * match[K], "%13.1f") << "%"
              << tut::num(beam_seconds, "%10.2f") << "\n";
  }
  t.say(
      "\"scored\" counts the (sequence, next token) pairs the decoder computed: the rows of "
      "every call times V. Greedy decodes the whole batch until the last word ends (finished "
      "rows ride along). Beam search drops a sequence once it ends in <eos> and scores at "
      "most K x V extensions per word and step, but it goes on while any kept sequence has "
      "not ended: with K >= 2 some word's beam always holds one that runs to the step limit "
      "(" +
      std::to_string(translator.tgt_steps) +
      " steps). So the work grows faster than K (compare beam 10's count with ten times "
      "beam 1's), though nowhere near exhaustive search's V^steps.");
  t.check("beam search with K = 1 gives greedy's answer for every word", k1_is_greedy);
  t.check("the work grows with K",
          scored[1] < scored[2] && scored[2] < scored[5] && scored[5] < scored[10],
          std::to_string(scored[1]) + " < " + std::to_string(scored[2]) + " < " +
              std::to_string(scored[5]) + " < " + std::to_string(scored[10]));
  // The bound by hand: words x K x V extensions per step, for every step.
  const auto V = static_cast<int64_t>(translator.tgt_vocab.size());
  bool within_bound = true, to_the_limit = true;
  for (const int64_t K : {1, 2, 5, 10}) {
    within_bound &= scored[K] <= kWords * K * V * translator.tgt_steps;
    if (K >= 2) to_the_limit &= calls[K] == translator.tgt_steps;
  }
  t.check("beam search scores at most K x V extensions per word and step", within_bound);
  t.check("with K >= 2 it runs to the step limit (" + std::to_string(translator.tgt_steps) +
              " decoder calls)",
          to_the_limit);
  t.check("the work grows faster than K: beam 10 scores over 10 times beam 1's",
          scored[10] > 10 * scored[1],
          tut::num(double(scored[10]) / double(scored[1]), "%.1f") + " times");
  {
    // A word whose answer the beam changes, with its candidates.
    for (size_t i = 0; i < words.size(); ++i) {
      if (phonemes(translator, beams[5][i][0].output) == greedy_out[i]) continue;
      std::cout << "\n\"" << words[i] << "\": greedy says " << greedy_out[i]
                << (examples[i].accepts(greedy_out[i]) ? " (right)" : " (wrong)")
                << "; the dictionary: " << examples[i].target << "\nbeam K = 5, best first:\n";
      for (const tr::BeamCandidate& c : beams[5][i])
        std::cout << "  " << phonemes(translator, c.output) << (c.finished ? "" : " (no <eos>)")
                  << "   log P " << tut::num(c.log_prob, "%.3f") << "   score "
                  << tut::num(c.score, "%.3f")
                  << (examples[i].accepts(phonemes(translator, c.output)) ? "   right" : "")
                  << "\n";
      break;
    }
    // Where each answer looked, greedy's alignment beside the beam's, for a
    // word they answer differently: canandaigua, one of the 200 above (named
    // here so that the sanitizers' shorter list draws it too).
    const std::string word = "canandaigua";
    const tr::Translation by_greedy = tr::translate(translator, {word}, 1, 1)[0],
                          by_beam = tr::translate(translator, {word}, 1, 5)[0];
    std::cout << "\n"
              << word << ", greedy:\n"
              << tr::alignment_table(by_greedy) << word << ", beam K = 5:\n"
              << tr::alignment_table(by_beam);
    t.alignment("beam_greedy_" + word, by_greedy, word + ", greedy: " + by_greedy.output, "Letters",
                "Phonemes");
    t.alignment("beam_k5_" + word, by_beam, word + ", beam K = 5: " + by_beam.output, "Letters",
                "Phonemes");
    t.check("greedy and the beam answer " + word + " differently (the two pictures)",
            by_beam.output != by_greedy.output);
  }

  t.step("Length normalisation: alpha",
         "beam_search keeps sequences by log P alone; alpha only ranks the finished "
         "candidates at the end (score = log P / L^alpha), and the K best of them by that "
         "score are returned. So the K = 10 candidates above can be ranked again for any "
         "alpha (a candidate another alpha would prefer may have been cut from the ten): "
         "alpha = 0 is plain log P, which prefers the shorter of two equally good answers; "
         "larger alpha gives long answers more credit.");
  const auto rank = [&](const std::vector<tr::BeamCandidate>& candidates, double alpha) {
    const tr::BeamCandidate* best = nullptr;
    double best_score = 0;
    for (const tr::BeamCandidate& c : candidates) {
      if (!c.finished) continue;
      const double s = c.log_prob / std::pow(double(c.output.size() + 1), alpha);
      if (!best || s > best_score) {
        best = &c;
        best_score = s;
      }
    }
    return best ? best : &candidates[0];
  };
  double reference_phonemes = 0;
  for (const tr::Example& e : examples)
    reference_phonemes += double(std::count(e.target.begin(), e.target.end(), ' ') + 1);
  reference_phonemes /= double(examples.size());
  std::cout << "  alpha   exact match   mean phonemes   shorter than greedy's   longer\n";
  std::map<double, double> mean_length, alpha_match;
  for (double alpha : {0.0, 0.5, 0.75, 1.0, 1.5, 3.0}) {
    std::vector<std::string> out;
    double length = 0;
    int64_t shorter = 0, longer = 0;
    for (size_t i = 0; i < words.size(); ++i) {
      const tr::BeamCandidate* best = rank(beams[10][i], alpha);
      out.push_back(phonemes(translator, best->output));
      length += double(best->output.size());
      shorter += best->output.size() < g2p_greedy[i].output.size();
      longer += best->output.size() > g2p_greedy[i].output.size();
    }
    mean_length[alpha] = length / double(words.size());
    alpha_match[alpha] = exact(out);
    std::cout << "  " << tut::num(alpha, "%5.2f") << tut::num(100 * exact(out), "%13.1f") << "%"
              << tut::num(mean_length[alpha], "%16.3f") << tut::num(double(shorter), "%24.0f")
              << tut::num(double(longer), "%9.0f") << "\n";
  }
  std::cout << "(the dictionary's first pronunciations: " << tut::num(reference_phonemes, "%.3f")
            << " phonemes on average)\n";
  t.check("the answers grow longer as alpha grows (alpha 0 -> 0.75 -> 3)",
          mean_length[0.0] <= mean_length[0.75] && mean_length[0.75] <= mean_length[3.0] &&
              mean_length[0.0] < mean_length[3.0],
          tut::num(mean_length[0.0], "%.3f") + " <= " + tut::num(mean_length[0.75], "%.3f") +
              " <= " + tut::num(mean_length[3.0], "%.3f"));
  // Ranking again is what beam_search does with another alpha, whenever its
  // answer is among the ten kept: checked on the first words.
  const int64_t few = std::min<int64_t>(20, kWords);
  const std::vector<std::string> first(words.begin(), words.begin() + few);
  const auto [few_src, few_len] = sources(translator, first);
  bool reranking_is_search = true;
  int64_t compared = 0, cut = 0;
  for (double alpha : {0.0, 3.0}) {
    const auto b =
        tr::beam_search(*translator.model, few_src, few_len, translator.tgt_steps, {10, alpha});
    for (int64_t i = 0; i < few; ++i) {
      const bool kept =
          std::any_of(beams[10][i].begin(), beams[10][i].end(),
                      [&](const tr::BeamCandidate& c) { return c.output == b[i][0].output; });
      if (!kept) {
        ++cut;
        continue;
      }
      ++compared;
      if (b[i][0].output != rank(beams[10][i], alpha)->output) reranking_is_search = false;
    }
  }
  t.check(
      "ranking the K = 10 candidates again = beam_search run with that alpha, where its answer "
      "is among the ten (20 words, alpha 0 and 3)",
      reranking_is_search && compared > 0,
      std::to_string(compared) + " compared, " + std::to_string(cut) + " cut from the ten");
  double lowest = 1, highest = 0;
  for (const auto& [alpha, m] : alpha_match)
    lowest = std::min(lowest, m), highest = std::max(highest, m);
  t.check("alpha from 0 to 3 moves the exact match by at most 2 points",
          highest - lowest <= 0.02 + 1e-12,
          tut::num(100 * lowest, "%.1f") + "% to " + tut::num(100 * highest, "%.1f") + "%");
  t.say(
      "With a model this sure of itself alpha matters little: it changes few answers, and "
      "a changed answer is rarely the right one instead of a wrong one. It matters when a model "
      "would rather stop "
      "early, as d2l's figures did (<eos> at P = 0.1). attograd-translate --beam K uses "
      "alpha = 0.75 everywhere; --json lists each candidate's log P and score.");
  return t.finish();
}
