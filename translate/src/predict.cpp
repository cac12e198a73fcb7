// Greedy decoding, beam search and translate() (predict.h).
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

namespace ag::translate {

namespace {

// Puts a module back in the training mode it had, whatever happens between
// (prediction runs in eval mode and must leave a training model training).
class ModeRestorer {
 public:
  explicit ModeRestorer(nn::Module& module) : module_(module), training_(module.is_training()) {}
  ~ModeRestorer() { module_.train(training_); }
  ModeRestorer(const ModeRestorer&) = delete;
  ModeRestorer& operator=(const ModeRestorer&) = delete;

 private:
  nn::Module& module_;
  bool training_;
};

// One kept sequence of one input: its tokens so far, log P, and its
// alignment rows (each valid_len wide), flat.
struct Hypothesis {
  std::vector<int64_t> tokens;
  double log_prob = 0;
  std::vector<double> token_log_probs;  // each step's; they sum to log_prob
  std::vector<double> rows;
};

BeamCandidate candidate_of(Hypothesis h, bool finished, int64_t cols, double alpha) {
  BeamCandidate c;
  const auto length = static_cast<int64_t>(h.tokens.size()) + (finished ? 1 : 0);
  c.output = std::move(h.tokens);
  c.finished = finished;
  c.log_prob = h.log_prob;
  c.token_log_probs = std::move(h.token_log_probs);
  c.score = h.log_prob / std::pow(static_cast<double>(length), alpha);
  c.alignment = tensor(h.rows, {length, cols}, kFloat64);
  return c;
}

// A NaN or a +infinity logit would decide the argmax or the beam's ordering
// arbitrarily (std::partial_sort's comparison is not even a strict weak
// order with NaN): an ag::Error naming the output step instead. -infinity is
// a token the model rules out (probability 0), which orders as any number.
void check_logits(const std::vector<double>& logits, int64_t step, const char* op) {
  const auto bad = std::find_if(logits.begin(), logits.end(),
                                [](double x) { return std::isnan(x) || x == INFINITY; });
  AG_CHECK(bad == logits.end(), op,
           "the decoder's logits at output step " + std::to_string(step + 1) + " hold " +
               (std::isnan(*bad) ? "NaN" : "+infinity") +
               " (the model's parameters or its input overflowed)");
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

// The decoder's next batch for beam_search: each input's kept extensions
// (parents[b], tokens[b]: rows of the current batch, tokens), in input order.
// A row reads its input's source (the encoder's outputs, the keys' memory),
// and the decoder copies every row's source whenever an input's number of
// rows changes (select_state), which a hypothesis that ends would do at most
// steps. So an input keeps its rows_of[b] rows, those its hypotheses no
// longer fill idle (a copy of its first row fed <eos>, outputs never read),
// while the idle rows are at most a quarter of the hypotheses; past that the
// batch is compacted, once. Idle rows cost their arithmetic, copies their
// memory traffic: beam 5 over 2,000 test words on one thread took 11.1 s
// always compacting, 8.9 s with a quarter, 13.9 s with a half
// (docs/performance.md). Updates rows_of; the rows and tokens as doubles, for
// tensor().
struct NextRows {
  std::vector<double> parents, tokens;
};
NextRows next_rows(const std::vector<std::vector<int64_t>>& parents,
                   const std::vector<std::vector<int64_t>>& tokens, std::vector<int64_t>& rows_of) {
  int64_t hypotheses = 0, idle = 0;
  for (size_t b = 0; b < parents.size(); ++b) {
    const auto kept = static_cast<int64_t>(parents[b].size());
    hypotheses += kept;
    idle += std::max<int64_t>(rows_of[b] - kept, 0);
  }
  if (hypotheses == 0) return {};
  const bool keep_rows = 4 * idle <= hypotheses;
  NextRows next;
  int64_t first_row = 0;  // input b's in the current batch
  for (size_t b = 0; b < parents.size(); ++b) {
    next.parents.insert(next.parents.end(), parents[b].begin(), parents[b].end());
    next.tokens.insert(next.tokens.end(), tokens[b].begin(), tokens[b].end());
    const auto kept = static_cast<int64_t>(parents[b].size());
    const int64_t rows = keep_rows ? std::max(kept, rows_of[b]) : kept;
    for (int64_t i = kept; i < rows; ++i) {
      next.parents.push_back(static_cast<double>(first_row));
      next.tokens.push_back(static_cast<double>(Vocab::kEos));
    }
    first_row += rows_of[b];
    rows_of[b] = rows;
  }
  return next;
}

}  // namespace

std::vector<Prediction> predict_seq2seq(nn::EncoderDecoder& model, const Tensor& src,
                                        const Tensor& src_valid_len, int64_t num_steps) {
  AG_CHECK(src.defined() && src.dim() == 2 && src.dtype() == kInt64, "predict_seq2seq",
           "src must be int64 [B, T], got " +
               (src.defined() ? shape_str(src.shape()) : std::string("an undefined tensor")));
  AG_CHECK(
      src_valid_len.defined() && src_valid_len.dim() == 1 && src_valid_len.size(0) == src.size(0),
      "predict_seq2seq", "src_valid_len must be [B] for src " + shape_str(src.shape()));
  AG_CHECK(num_steps > 0, "predict_seq2seq", "num_steps " + std::to_string(num_steps) + " <= 0");
  ModeRestorer restore(model);
  model.eval();
  model.set_need_weights(true);  // each step's alignment is kept
  NoGradGuard no_grad;
  const int64_t batch = src.size(0);
  const std::vector<double> valid = src_valid_len.to_vector();
  nn::DecoderState state =
      model.decoder().init_state(model.encoder().forward(src, src_valid_len), src_valid_len);
  std::vector<Prediction> predictions(static_cast<size_t>(batch));
  std::vector<std::vector<double>> rows(static_cast<size_t>(batch));  // alignment rows, flat
  Tensor dec_input = full({batch, 1}, static_cast<double>(Vocab::kBos), kInt64);
  int64_t unfinished = batch;
  std::vector<double> log_probs;  // one row's log_softmax
  for (int64_t step = 0; step < num_steps && unfinished > 0; ++step) {
    const Tensor logits = model.decoder().forward(dec_input, state);  // [B, 1, V]
    const std::vector<double> scores = logits.to(kFloat64).to_vector();
    check_logits(scores, step, "predict_seq2seq");
    const int64_t V = logits.size(2);
    dec_input = argmax(logits, 2);  // [B, 1]
    const std::vector<double> next = dec_input.to_vector();
    const Tensor alignment = model.decoder().alignment();  // [B, 1, T]
    AG_CHECK(alignment.defined() && alignment.dim() == 3 && alignment.size(0) == batch &&
                 alignment.size(1) == 1 && alignment.size(2) == src.size(1),
             "predict_seq2seq",
             "the decoder's alignment() must be [B, 1, T] = [" + std::to_string(batch) + ", 1, " +
                 std::to_string(src.size(1)) + "] after one step, got " +
                 (alignment.defined() ? shape_str(alignment.shape()) : std::string("undefined")));
    const std::vector<double> weights = alignment.to_vector();
    for (int64_t b = 0; b < batch; ++b) {
      Prediction& p = predictions[static_cast<size_t>(b)];
      if (p.finished) continue;
      const auto begin = weights.begin() + b * src.size(1);
      rows[static_cast<size_t>(b)].insert(rows[static_cast<size_t>(b)].end(), begin,
                                          begin + static_cast<int64_t>(valid[b]));
      const auto token = static_cast<int64_t>(next[static_cast<size_t>(b)]);
      log_softmax_row(scores.data() + b * V, V, log_probs);
      p.token_log_probs.push_back(log_probs[static_cast<size_t>(token)]);
      if (token == Vocab::kEos) {
        p.finished = true;
        --unfinished;
      } else {
        p.output.push_back(token);
      }
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    Prediction& p = predictions[static_cast<size_t>(b)];
    const auto cols = static_cast<int64_t>(valid[static_cast<size_t>(b)]);
    const auto num_rows = static_cast<int64_t>(p.output.size()) + (p.finished ? 1 : 0);
    p.alignment = tensor(rows[static_cast<size_t>(b)], {num_rows, cols}, kFloat64);
  }
  return predictions;
}

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
  // The kept rows: live[b] are input b's hypotheses. Input b holds rows_of[b]
  // rows of the decoder's batch (inputs in order): its hypotheses in order,
  // then idle rows (next_rows), whose outputs are never read.
  std::vector<std::vector<Hypothesis>> live(static_cast<size_t>(B), std::vector<Hypothesis>(1));
  std::vector<int64_t> rows_of(static_cast<size_t>(B), 1);
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
    check_logits(scores, step, op);
    // Each input's extensions kept: which old row, which token.
    std::vector<std::vector<int64_t>> parents(static_cast<size_t>(B)), tokens(parents.size());
    int64_t row = 0;  // input b's first row
    for (int64_t b = 0; b < B; ++b) {
      std::vector<Hypothesis>& hyps = live[static_cast<size_t>(b)];
      // Every extension (hypothesis i, token v) of this input, by log P.
      struct Extension {
        double log_prob, token_log_prob;  // the sequence's, the new token's
        int64_t hyp, token;
      };
      std::vector<Extension> extensions;
      extensions.reserve(hyps.size() * static_cast<size_t>(V));
      for (size_t i = 0; i < hyps.size(); ++i) {
        log_softmax_row(scores.data() + (row + static_cast<int64_t>(i)) * V, V, log_probs);
        for (int64_t v = 0; v < V; ++v) {
          // <pad>, <bos> and <unk> are never said: a beam wider than the
          // likely tokens would reach them. (K = 1 stays greedy search,
          // whose argmax is d2l's over every token.)
          if (K > 1 && (v == Vocab::kPad || v == Vocab::kBos || v == Vocab::kUnk)) continue;
          const double token_log_prob = log_probs[static_cast<size_t>(v)];
          extensions.push_back(
              {hyps[i].log_prob + token_log_prob, token_log_prob, static_cast<int64_t>(i), v});
        }
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
        h.token_log_probs.push_back(x.token_log_prob);
        h.log_prob = x.log_prob;
        const auto begin = weights.begin() + parent * T;
        h.rows.insert(h.rows.end(), begin, begin + cols);
        if (x.token == Vocab::kEos) {
          finished[static_cast<size_t>(b)].push_back(std::move(h));
        } else {
          h.tokens.push_back(x.token);
          next.push_back(std::move(h));
          parents[static_cast<size_t>(b)].push_back(parent);
          tokens[static_cast<size_t>(b)].push_back(x.token);
        }
      }
      row += rows_of[static_cast<size_t>(b)];
      hyps = std::move(next);
    }
    const NextRows next = next_rows(parents, tokens, rows_of);
    if (next.parents.empty()) break;  // every hypothesis of every input has finished
    const auto R_next = static_cast<int64_t>(next.parents.size());
    decoder.select_state(state, tensor(next.parents, {R_next}, kInt64));
    dec_input = tensor(next.tokens, {R_next, 1}, kInt64);
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

std::vector<std::string> alignment_columns(const std::string& text, Tokenization source) {
  std::vector<std::string> columns = tokenize(text, source);
  columns.push_back(Vocab::reserved_tokens()[Vocab::kEos]);
  return columns;
}

std::vector<Translation> translate(Translator& translator, const std::vector<std::string>& texts,
                                   int64_t batch_size, int64_t beam) {
  AG_CHECK(translator.model != nullptr, "translate", "the translator has no model");
  AG_CHECK(batch_size > 0, "translate", "batch_size " + std::to_string(batch_size) + " <= 0");
  AG_CHECK(beam >= 1, "translate", "beam " + std::to_string(beam) + " < 1");
  const Tokenization tokenization = translator.task.target;
  const auto output_tokens = [&](const std::vector<int64_t>& output, bool finished) {
    std::vector<std::string> tokens = translator.tgt_vocab.tokens(output);
    if (finished) tokens.push_back(Vocab::reserved_tokens()[Vocab::kEos]);
    return tokens;
  };
  std::vector<Translation> out;
  out.reserve(texts.size());
  for (size_t first = 0; first < texts.size(); first += static_cast<size_t>(batch_size)) {
    const std::vector<std::string> chunk(
        texts.begin() + static_cast<int64_t>(first),
        texts.begin() +
            static_cast<int64_t>(std::min(texts.size(), first + static_cast<size_t>(batch_size))));
    auto [src, src_valid_len] =
        encode_sources(chunk, translator.src_vocab, translator.src_steps, translator.task.source);
    if (skips_padding(translator.config)) src = cut_padding(src, src_valid_len);
    std::vector<Prediction> predictions;
    std::vector<std::vector<BeamCandidate>> beams;
    if (beam == 1) {
      predictions = predict_seq2seq(*translator.model, src, src_valid_len, translator.tgt_steps);
    } else {
      beams =
          beam_search(*translator.model, src, src_valid_len, translator.tgt_steps, {beam, 0.75});
      for (const auto& candidates : beams)
        predictions.push_back({candidates[0].output, candidates[0].finished,
                               candidates[0].token_log_probs, candidates[0].alignment});
    }
    for (size_t i = 0; i < chunk.size(); ++i) {
      const Prediction& p = predictions[i];
      Translation t;
      t.input = chunk[i];
      t.source_tokens = alignment_columns(chunk[i], translator.task.source);
      t.output = detokenize(translator.tgt_vocab.tokens(p.output), tokenization);
      t.output_tokens = output_tokens(p.output, p.finished);
      t.token_log_probs = p.token_log_probs;
      t.alignment = p.alignment;
      if (!beams.empty())
        for (const BeamCandidate& c : beams[i])
          t.beam.push_back({detokenize(translator.tgt_vocab.tokens(c.output), tokenization),
                            output_tokens(c.output, c.finished), c.finished, c.log_prob, c.score,
                            c.token_log_probs, c.alignment});
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace ag::translate
