// d2l's seq2seq with attention ("Bahdanau Attention"), composed from
// Embedding, GRU, the attention modules and Linear.
// Legend: B batch, T source steps, Tout target steps, E embedding size,
// H hidden units, L GRU layers, V vocabulary.
#include "attograd/nn/seq2seq.h"

#include <algorithm>
#include <cmath>

#include "shape_text.h"

namespace ag::nn {

namespace {

// Token ids: int64 [B, T] with T >= 1 (the range is Embedding's check).
void check_tokens(const Tensor& tokens, const char* what, const std::string& op) {
  AG_CHECK(tokens.defined() && tokens.dtype() == kInt64 && tokens.dim() == 2 &&
               tokens.size(0) > 0 && tokens.size(1) > 0,
           op.c_str(),
           std::string("expected ") + what + " as int64 [B, T] with B, T >= 1, got " +
               shape_or_none(tokens) +
               (tokens.defined() ? std::string(" ") + dtype_name(tokens.dtype()) : ""));
}

// The encoder's hidden size per direction (He) for a decoder of H units:
// `requested`, or H when 0; ag::Error for a one-way encoder of another size
// (d2l's decoder starts from its final states as they are).
int64_t encoder_width(int64_t requested, int64_t num_hiddens, bool bidirectional) {
  const int64_t width = requested > 0 ? requested : num_hiddens;
  AG_CHECK(requested >= 0 && (bidirectional || width == num_hiddens), "Seq2SeqAttentionDecoder",
           "encoder_hiddens " + std::to_string(requested) + " with hidden size " +
               std::to_string(num_hiddens) +
               ": d2l's decoder starts from the one-way encoder's final states as they are, so "
               "that encoder has the decoder's hidden size (only the bidirectional one's may "
               "differ, through W_s)");
  return width;
}

}  // namespace

// ---- Seq2SeqEncoder -------------------------------------------------------------------

Seq2SeqEncoder::Seq2SeqEncoder(int64_t vocab_size, int64_t embed_size, int64_t num_hiddens,
                               int64_t num_layers, double dropout, bool bidirectional)
    : Encoder("Seq2SeqEncoder"),
      embedding(vocab_size, embed_size),
      rnn(embed_size, num_hiddens, num_layers, dropout, bidirectional) {
  register_module("embedding", &embedding);
  register_module("rnn", &rnn);
}

std::vector<Tensor> Seq2SeqEncoder::forward(const Tensor& src, const Tensor& src_valid_lens) {
  check_tokens(src, "src", type_name());
  // d2l embeds [B, T] -> [B, T, E] and permutes to time-major [T, B, E];
  // embedding the transposed ids [T, B] gives that tensor directly (a gather
  // either way: the same numbers), contiguous for the GRU.
  Tensor X = embedding(transpose(src, 0, 1));
  // outputs [T, B, D*H] (the last layer at every step), state [D*L, B, H]
  // (every layer's and direction's last step); h0 = 0
  // d2l's encoder runs over the padding; the bidirectional one skips it as
  // torch's packed sequences (GRU::forward's lengths): its backward direction
  // starts at each source's <eos>.
  auto [outputs, state] = rnn.forward(X, Tensor(), rnn.bidirectional ? src_valid_lens : Tensor());
  return {outputs, state};
}

// ---- Seq2SeqAttentionDecoder ----------------------------------------------------------

Seq2SeqAttentionDecoder::Seq2SeqAttentionDecoder(int64_t vocab_size, int64_t embed_size,
                                                 int64_t num_hiddens, int64_t num_layers,
                                                 double dropout, const std::string& scoring,
                                                 bool bidirectional_encoder, int64_t num_heads,
                                                 int64_t encoder_hiddens)
    : Decoder("Seq2SeqAttentionDecoder"),
      scoring(scoring),
      bidirectional_encoder(bidirectional_encoder),
      encoder_hiddens(encoder_width(encoder_hiddens, num_hiddens, bidirectional_encoder)),
      key_size(bidirectional_encoder ? 2 * this->encoder_hiddens : this->encoder_hiddens),
      attention(make_scoring_function(scoring, {.query_size = num_hiddens,
                                                .key_size = key_size,
                                                .num_hiddens = num_hiddens,
                                                .num_heads = num_heads,
                                                .dropout = dropout})),
      embedding(vocab_size, embed_size),
      rnn(embed_size + attention->context_size(), num_hiddens, num_layers, dropout),
      dense(num_hiddens, vocab_size) {
  register_module("attention", attention.get());
  register_module("embedding", &embedding);
  register_module("rnn", &rnn);
  register_module("dense", &dense);
  if (bidirectional_encoder) {
    W_s = std::make_unique<Linear>(this->encoder_hiddens, num_hiddens, /*bias=*/false);
    register_module("W_s", W_s.get());
  }
}

DecoderState Seq2SeqAttentionDecoder::init_state(const std::vector<Tensor>& enc_outputs,
                                                 const Tensor& src_valid_lens) {
  const char* op = "Seq2SeqAttentionDecoder.init_state";
  AG_CHECK(enc_outputs.size() == 2 && enc_outputs[0].defined() && enc_outputs[1].defined(), op,
           "expected the encoder's {outputs [T, B, K], state [D*L, B, H]}, got " +
               std::to_string(enc_outputs.size()) + " tensors");
  const Tensor &outputs = enc_outputs[0], &final_states = enc_outputs[1];
  const int64_t He = encoder_hiddens, L = rnn.num_layers, D = bidirectional_encoder ? 2 : 1;
  AG_CHECK(outputs.dim() == 3 && final_states.dim() == 3 &&
               outputs.size(1) == final_states.size(1) && outputs.size(2) == key_size &&
               final_states.size(2) == He && final_states.size(0) == D * L,
           op,
           "expected outputs [T, B, " + std::to_string(key_size) + "] and state [" +
               std::to_string(D * L) + ", B, " + std::to_string(He) + "]" +
               (bidirectional_encoder ? " of a bidirectional encoder" : "") + ", got " +
               shape_str(outputs.shape()) + " and " + shape_str(final_states.shape()));
  if (src_valid_lens.defined())
    AG_CHECK(src_valid_lens.dtype() == kInt64 && src_valid_lens.dim() == 1 &&
                 src_valid_lens.size(0) == outputs.size(1),
             op,
             "expected src_valid_lens int64 [" + std::to_string(outputs.size(1)) + "], got " +
                 shape_str(src_valid_lens.shape()) + " " + dtype_name(src_valid_lens.dtype()));
  Tensor hidden = final_states;  // d2l: [L, B, H] as the encoder left them
  if (bidirectional_encoder) {
    // s0_k = tanh(W_s h_n[2k + 1]): each layer's backward direction, whose
    // last step is the first source position. [L, B, H]
    std::vector<Tensor> backward;
    for (int64_t k = 0; k < L; ++k) backward.push_back(narrow(final_states, 0, 2 * k + 1, 1));
    hidden = tanh((*W_s)(L == 1 ? backward[0] : cat(backward, 0)));
  }
  // outputs [T, B, K] -> [B, T, K], copied once here (contiguous) rather than
  // walked through strides by the attention at every target step.
  Tensor keys = permute(outputs, {1, 0, 2}).contiguous();
  AttentionMemory memory = attention->remember(keys, keys);
  // Which source each row reads: row b reads source b (select_state keeps it).
  Tensor source_of_row = arange(outputs.size(1), kInt64);
  return {{std::move(keys), hidden, src_valid_lens, std::move(memory.keys),
           std::move(memory.values), std::move(source_of_row)},
          {}};
}

namespace {

// The state init_state made: its five tensors, or an ag::Error naming `op`.
void check_state(const DecoderState& state, const std::string& op) {
  AG_CHECK(state.tensors.size() == 6 && state.tensors[0].defined() && state.tensors[1].defined() &&
               state.tensors[3].defined() && state.tensors[4].defined() &&
               state.tensors[5].defined(),
           op.c_str(),
           "expected the state of init_state {enc_outputs, hidden, enc_valid_lens, memory keys, "
           "memory values, source of each row}, got " +
               std::to_string(state.tensors.size()) + " tensors");
}

// x's rows `rows` [B'] on axis 0, where x holds B rows or, per head, B * h
// rows in batch-major order (row b's heads at b h .. b h + h - 1, as
// multihead's remember() lays them out).
Tensor select_batch_rows(const Tensor& x, const Tensor& rows, int64_t B) {
  const int64_t heads = x.size(0) / B;
  if (heads == 1) return index_select(x, 0, rows);
  std::vector<double> expanded;
  for (double r : rows.to_vector())
    for (int64_t h = 0; h < heads; ++h) expanded.push_back(r * static_cast<double>(heads) + h);
  return index_select(x, 0, tensor(expanded, {static_cast<int64_t>(expanded.size())}, kInt64));
}

}  // namespace

void Seq2SeqAttentionDecoder::select_state(DecoderState& state, const Tensor& rows) const {
  check_state(state, "Seq2SeqAttentionDecoder.select_state");
  // hidden [L, B, H] on its second axis: every row continues its parent's.
  state.tensors[1] = index_select(state.tensors[1], 1, rows);
  // The source's tensors: enc_outputs [B, T, K], enc_valid_lens [B] and the
  // memory ([B, ...] or [B * heads, ...]) on their first axis. A row reads
  // its parent's source; when every row then reads the source it read
  // before (a beam that kept as many hypotheses of each input), they are
  // kept as they are rather than copied: most of a beam's steps.
  const std::vector<double> parents = rows.to_vector(), sources = state.tensors[5].to_vector();
  std::vector<double> new_sources;
  for (double parent : parents) new_sources.push_back(sources.at(static_cast<size_t>(parent)));
  if (new_sources == sources) return;
  const int64_t B = state.tensors[0].size(0);
  const bool values_are_outputs = state.tensors[4].impl() == state.tensors[0].impl();
  state.tensors[0] = index_select(state.tensors[0], 0, rows);
  if (state.tensors[2].defined()) state.tensors[2] = index_select(state.tensors[2], 0, rows);
  state.tensors[3] = select_batch_rows(state.tensors[3], rows, B);
  // (additive's and general's values are the outputs themselves: one copy)
  state.tensors[4] =
      values_are_outputs ? state.tensors[0] : select_batch_rows(state.tensors[4], rows, B);
  state.tensors[5] = tensor(new_sources, {static_cast<int64_t>(new_sources.size())}, kInt64);
}

Tensor Seq2SeqAttentionDecoder::forward(const Tensor& tgt, DecoderState& state) {
  const std::string& op = type_name();
  check_tokens(tgt, "tgt", op);
  check_state(state, op);
  const Tensor& enc_outputs = state.tensors[0];  // [B, T, K]
  const Tensor& enc_valid_lens = state.tensors[2];
  Tensor hidden = state.tensors[1];  // [L, B, H]
  const int64_t B = tgt.size(0), Tout = tgt.size(1), L = hidden.size(0);
  AG_CHECK(enc_outputs.size(0) == B && hidden.size(1) == B, op.c_str(),
           "batch sizes differ: tgt " + shape_str(tgt.shape()) + ", enc_outputs " +
               shape_str(enc_outputs.shape()) + ", hidden " + shape_str(hidden.shape()));

  // X = embedding(tgt) permuted to time-major: [B, Tout] -> [Tout, B, E]
  // (the transposed ids embedded, as in the encoder)
  const Tensor X = embedding(transpose(tgt, 0, 1));

  // d2l calls its attention once per step with the same keys and values
  // (enc_outputs); what of them does not depend on the query (additive's
  // k W_k^T, say) init_state computed once per source. The numbers are the
  // same; the backward sums the steps' gradients before going through the
  // keys' projection once, instead of Tout times.
  const AttentionMemory memory{state.tensors[3], state.tensors[4]};

  std::vector<Tensor> outputs;
  outputs.reserve(static_cast<size_t>(Tout));
  step_weights_.clear();
  step_weights_.reserve(static_cast<size_t>(Tout));
  Tensor last = narrow(hidden, 0, L - 1, 1);  // the last layer's hidden state [1, B, H]
  for (int64_t t = 0; t < Tout; ++t) {
    // query = the last layer's hidden state: [1, B, H] -> [B, 1, H]
    const Tensor query = permute(last, {1, 0, 2});
    // context = attention(query, enc_outputs, enc_outputs, enc_valid_lens): [B, 1, C]
    const Tensor context = attention->attend(query, memory, enc_valid_lens);
    step_weights_.push_back(attention->attention_weights());
    // x = cat(context, embedded step) on the features, time-major:
    // [B, 1, C] -> [1, B, C]; with [1, B, E] -> [1, B, C + E]
    // (d2l concatenates [B, 1, H] and [B, 1, E], then permutes: the same tensor)
    const Tensor x = cat({permute(context, {1, 0, 2}), narrow(X, 0, t, 1)}, 2);
    // One GRU step: out [1, B, H] (the new last layer), hidden [L, B, H]
    auto [out, h_n] = rnn.forward(x, hidden);
    outputs.push_back(out);
    hidden = h_n;
    last = out;  // = narrow(h_n, 0, L - 1, 1), the same values
  }
  state.tensors[1] = hidden;
  // outputs: Tout x [1, B, H] -> [Tout, B, H] -> [B, Tout, H]; d2l applies
  // dense first and permutes the logits, the same numbers; permuting the
  // smaller [*, H] tensor first leaves the logits contiguous.
  const Tensor steps = permute(cat(outputs, 0), {1, 0, 2});
  // logits = dense(steps): [B, Tout, H] -> [B, Tout, V]
  return dense(steps);
}

Tensor Seq2SeqAttentionDecoder::alignment() const {
  if (step_weights_.empty()) return Tensor();
  // Tout x [B, 1, T] -> [B, Tout, T]
  return cat(step_weights_, 1);
}

std::unique_ptr<EncoderDecoder> make_bahdanau_seq2seq(int64_t src_vocab_size,
                                                      int64_t tgt_vocab_size, int64_t embed_size,
                                                      int64_t num_hiddens, int64_t num_layers,
                                                      double dropout, const std::string& scoring,
                                                      bool bidirectional, int64_t num_heads,
                                                      int64_t encoder_hiddens) {
  // One expression: the compiler's order for the arguments decides which
  // half draws its initial values first, and a model of a given seed must
  // keep the values it had.
  return std::make_unique<EncoderDecoder>(
      std::make_unique<Seq2SeqEncoder>(src_vocab_size, embed_size,
                                       encoder_hiddens > 0 ? encoder_hiddens : num_hiddens,
                                       num_layers, dropout, bidirectional),
      std::make_unique<Seq2SeqAttentionDecoder>(tgt_vocab_size, embed_size, num_hiddens, num_layers,
                                                dropout, scoring, bidirectional, num_heads,
                                                encoder_hiddens));
}

// ---- init ---------------------------------------------------------------------------

void xavier_uniform_(Tensor& weight, double gain) {
  AG_CHECK(
      weight.defined() && weight.dim() == 2 && is_floating(weight.dtype()) &&
          weight.is_contiguous(),
      "xavier_uniform_",
      "expected a contiguous 2-D floating weight [fan_out, fan_in], got " + shape_or_none(weight));
  const double fan_out = static_cast<double>(weight.size(0));
  const double fan_in = static_cast<double>(weight.size(1));
  const double a = gain * std::sqrt(6.0 / (fan_in + fan_out));
  const Tensor values = uniform(weight.shape(), -a, a, weight.dtype());
  // In place, as load_state_dict: optimizers holding the parameter see the
  // new values, and graphs recorded before see the version change.
  dispatch_floating(weight.dtype(), "xavier_uniform_", [&](auto tag) {
    using T = decltype(tag);
    std::copy_n(values.data_ptr<T>(), values.numel(), weight.data_ptr<T>());
  });
  weight.impl()->storage()->bump_version();
}

void init_seq2seq(Module& module) {
  module.apply([](Module& m) {
    if (auto* linear = dynamic_cast<Linear*>(&m)) xavier_uniform_(linear->weight);
    if (auto* gru = dynamic_cast<GRU*>(&m))
      for (auto& [name, parameter] : gru->named_parameters())
        if (name.starts_with("weight")) xavier_uniform_(parameter);
  });
}

}  // namespace ag::nn
