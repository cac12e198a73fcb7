// Beam search (predict.h).
//
// Legend: B inputs, K beam size, R kept rows (at most B K), V target
// vocabulary, T source steps.
#include "attograd/translate/predict.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "attograd/attograd.h"
#include "attograd/translate/data.h"
#include "mode_restorer.h"

namespace ag::translate {

namespace {

// One kept sequence of one input: its tokens so far, log P, and its
// alignment rows (each valid_len wide), flat.
struct Hypothesis {
  std::vector<int64_t> tokens;
  double log_prob = 0;
  std::vector<double> rows;
};

BeamCandidate candidate_of(Hypothesis h, bool finished, int64_t cols, double alpha) {
  BeamCandidate c;
  const auto length = static_cast<int64_t>(h.tokens.size()) + (finished ? 1 : 0);
  c.output = std::move(h.tokens);
  c.finished = finished;
  c.log_prob = h.log_prob;
  c.score = h.log_prob / std::pow(static_cast<double>(length), alpha);
  c.alignment = tensor(h.rows, {length, cols}, kFloat64);
  return c;
}

// log_softmax of one row of logits, in double.
void log_softmax_row(const double* logits, int64_t V, std::vector<double>& out) {
  const double max = *std::max_element(logits, logits + V);
  double total = 0;
  for (int64_t v = 0; v < V; ++v) total += std::exp(logits[v] - max);
  const double log_total = max + std::log(total);
  out.resize(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v) out[static_cast<size_t>(v)] = logits[v] - log_total;
}

}  // namespace

std::vector<std::vector<BeamCandidate>> beam_search(nn::EncoderDecoder& model, const Tensor& src,
                                                    const Tensor& src_valid_len, int64_t num_steps,
                                                    const BeamOptions& options) {
  const char* op = "beam_search";
  AG_CHECK(src.defined() && src.dim() == 2 && src.dtype() == kInt64 && src.size(0) > 0, op,
           "src must be int64 [B, T] with B >= 1, got " +
               (src.defined() ? shape_str(src.shape()) : std::string("an undefined tensor")));
  AG_CHECK(
      src_valid_len.defined() && src_valid_len.dim() == 1 && src_valid_len.size(0) == src.size(0),
      op, "src_valid_len must be [B] for src " + shape_str(src.shape()));
  AG_CHECK(num_steps > 0, op, "num_steps " + std::to_string(num_steps) + " < 1");
  AG_CHECK(options.beam_size >= 1 && options.beam_size <= 1000, op,
           "beam size " + std::to_string(options.beam_size) + " is outside [1, 1000]");
  AG_CHECK(options.alpha >= 0 && std::isfinite(options.alpha), op,
           "alpha " + number_str(options.alpha) + " must be finite and >= 0");
  ModeRestorer restore(model);
  model.eval();
  model.set_need_weights(true);  // each step's alignment is kept
  NoGradGuard no_grad;
  const int64_t B = src.size(0), T = src.size(1), K = options.beam_size;
  const std::vector<double> valid = src_valid_len.to_vector();

  nn::Decoder& decoder = model.decoder();
  nn::DecoderState state =
      decoder.init_state(model.encoder().forward(src, src_valid_len), src_valid_len);
  // The kept rows: live[b] are input b's hypotheses; row r of the decoder's
  // batch is live[owner[r]][slot[r]] (inputs in order, their hypotheses in order).
  std::vector<std::vector<Hypothesis>> live(static_cast<size_t>(B), std::vector<Hypothesis>(1));
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(B));
  Tensor dec_input = full({B, 1}, static_cast<double>(Vocab::kBos), kInt64);  // [R, 1]
  std::vector<double> log_probs;
  for (int64_t step = 0; step < num_steps; ++step) {
    const Tensor logits = decoder.forward(dec_input, state);  // [R, 1, V]
    const Tensor alignment = decoder.alignment();             // [R, 1, T]
    const int64_t R = logits.size(0), V = logits.size(2);
    AG_CHECK(alignment.defined() && alignment.shape() == Shape({R, 1, T}), op,
             "the decoder's alignment() must be [R, 1, T] = " + shape_str({R, 1, T}) +
                 " after one step, got " +
                 (alignment.defined() ? shape_str(alignment.shape()) : std::string("undefined")));
    const std::vector<double> scores = logits.to(kFloat64).to_vector(),
                              weights = alignment.to_vector();
    std::vector<int64_t> parent_rows, next_tokens;  // the new rows: which old row, which token
    int64_t row = 0;
    for (int64_t b = 0; b < B; ++b) {
      std::vector<Hypothesis>& hyps = live[static_cast<size_t>(b)];
      // Every extension (hypothesis i, token v) of this input, by log P.
      struct Extension {
        double log_prob;
        int64_t hyp, token;
      };
      std::vector<Extension> extensions;
      extensions.reserve(hyps.size() * static_cast<size_t>(V));
      for (size_t i = 0; i < hyps.size(); ++i) {
        log_softmax_row(scores.data() + (row + static_cast<int64_t>(i)) * V, V, log_probs);
        for (int64_t v = 0; v < V; ++v)
          extensions.push_back(
              {hyps[i].log_prob + log_probs[static_cast<size_t>(v)], static_cast<int64_t>(i), v});
      }
      // The K best; ties to the earlier hypothesis, then the lower token (so
      // that K = 1 is argmax's choice).
      const size_t keep = std::min(extensions.size(), static_cast<size_t>(K));
      std::partial_sort(extensions.begin(), extensions.begin() + static_cast<int64_t>(keep),
                        extensions.end(), [](const Extension& x, const Extension& y) {
                          if (x.log_prob != y.log_prob) return x.log_prob > y.log_prob;
                          return x.hyp != y.hyp ? x.hyp < y.hyp : x.token < y.token;
                        });
      const auto cols = static_cast<int64_t>(valid[static_cast<size_t>(b)]);
      std::vector<Hypothesis> next;
      for (size_t e = 0; e < keep; ++e) {
        const Extension& x = extensions[e];
        const int64_t parent = row + x.hyp;
        Hypothesis h = hyps[static_cast<size_t>(x.hyp)];
        h.log_prob = x.log_prob;
        const auto begin = weights.begin() + parent * T;
        h.rows.insert(h.rows.end(), begin, begin + cols);
        if (x.token == Vocab::kEos) {
          finished[static_cast<size_t>(b)].push_back(std::move(h));
        } else {
          h.tokens.push_back(x.token);
          next.push_back(std::move(h));
          parent_rows.push_back(parent);
          next_tokens.push_back(x.token);
        }
      }
      row += static_cast<int64_t>(hyps.size());
      hyps = std::move(next);
    }
    if (parent_rows.empty()) break;  // every hypothesis of every input has finished
    const auto R_next = static_cast<int64_t>(parent_rows.size());
    std::vector<double> parents(parent_rows.begin(), parent_rows.end()),
        tokens(next_tokens.begin(), next_tokens.end());
    decoder.select_state(state, tensor(parents, {R_next}, kInt64));
    dec_input = tensor(tokens, {R_next, 1}, kInt64);
  }

  std::vector<std::vector<BeamCandidate>> out(static_cast<size_t>(B));
  const auto by_score = [](const BeamCandidate& x, const BeamCandidate& y) {
    return x.score > y.score;
  };
  for (int64_t b = 0; b < B; ++b) {
    const auto cols = static_cast<int64_t>(valid[static_cast<size_t>(b)]);
    std::vector<BeamCandidate>& candidates = out[static_cast<size_t>(b)];
    for (Hypothesis& h : finished[static_cast<size_t>(b)])
      candidates.push_back(candidate_of(std::move(h), true, cols, options.alpha));
    std::stable_sort(candidates.begin(), candidates.end(), by_score);
    std::vector<BeamCandidate> unfinished;
    for (Hypothesis& h : live[static_cast<size_t>(b)])
      unfinished.push_back(candidate_of(std::move(h), false, cols, options.alpha));
    std::stable_sort(unfinished.begin(), unfinished.end(), by_score);
    for (BeamCandidate& c : unfinished) candidates.push_back(std::move(c));
    if (candidates.size() > static_cast<size_t>(K)) candidates.resize(static_cast<size_t>(K));
  }
  return out;
}

}  // namespace ag::translate
