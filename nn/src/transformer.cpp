// d2l's Transformer, composed from nn modules.
// Legend: B batch, T source steps, Tout target steps, d = num_hiddens, H heads,
// V vocabulary.
#include "attograd/nn/transformer.h"

#include <cmath>

namespace ag::nn {

namespace {

// The tokens a model takes: int64 [B, T] with T >= 1.
void check_tokens(const Tensor& tokens, const char* what, const std::string& op) {
  AG_CHECK(tokens.defined(), op.c_str(), std::string(what) + " must be defined");
  AG_CHECK(tokens.dtype() == kInt64 && tokens.dim() == 2 && tokens.size(1) > 0, op.c_str(),
           std::string(what) + " must be int64 [B, T] with T >= 1, got " +
               dtype_name(tokens.dtype()) + " " + shape_str(tokens.shape()));
}

// Source valid lengths: undefined (no padding) or int64 [B] with 0 <= len <= T.
void check_source_lens(const Tensor& lens, int64_t B, int64_t T, const std::string& op) {
  if (!lens.defined()) return;
  AG_CHECK(lens.dtype() == kInt64 && lens.shape() == Shape{B}, op.c_str(),
           "source valid lengths must be int64 [" + std::to_string(B) +
               "] (one per batch item), got " + dtype_name(lens.dtype()) + " " +
               shape_str(lens.shape()));
  for (const double len : lens.to_vector())
    AG_CHECK(len >= 0 && len <= static_cast<double>(T), op.c_str(),
             "source valid length " + number_str(len) + " is outside [0, " + std::to_string(T) +
                 "] (" + std::to_string(T) + " source steps)");
}

}  // namespace

// ---- PositionWiseFFN ---------------------------------------------------------------------

PositionWiseFFN::PositionWiseFFN(int64_t ffn_num_input, int64_t ffn_num_hiddens,
                                 int64_t ffn_num_outputs)
    : Module("PositionWiseFFN"),
      dense1(ffn_num_input, ffn_num_hiddens),
      dense2(ffn_num_hiddens, ffn_num_outputs) {
  register_module("dense1", &dense1);
  register_module("dense2", &dense2);
}

// [..., in] -> dense1 -> [..., hiddens] -> relu -> dense2 -> [..., out]
Tensor PositionWiseFFN::forward(const Tensor& X) const {
  return dense2(relu(dense1(X)));
}

// ---- AddNorm -----------------------------------------------------------------------------

AddNorm::AddNorm(Shape norm_shape, double dropout_p)
    : Module("AddNorm"), dropout(dropout_p), ln(std::move(norm_shape)) {
  register_module("dropout", &dropout);
  register_module("ln", &ln);
}

// ln(dropout(Y) + X): [..., *norm_shape], X and Y of one shape
Tensor AddNorm::forward(const Tensor& X, const Tensor& Y) const {
  AG_CHECK(X.defined() && Y.defined() && X.shape() == Y.shape(), "AddNorm",
           "X and Y must have one shape, got " + (X.defined() ? shape_str(X.shape()) : "none") +
               " and " + (Y.defined() ? shape_str(Y.shape()) : "none"));
  return ln(dropout(Y) + X);
}

// X + dropout(Y): [..., *norm_shape], X and Y of one shape
Tensor AddNorm::add(const Tensor& X, const Tensor& Y) const {
  AG_CHECK(X.defined() && Y.defined() && X.shape() == Y.shape(), "AddNorm.add",
           "X and Y must have one shape, got " + (X.defined() ? shape_str(X.shape()) : "none") +
               " and " + (Y.defined() ? shape_str(Y.shape()) : "none"));
  return X + dropout(Y);
}

// ---- PositionalEncoding --------------------------------------------------------------------

PositionalEncoding::PositionalEncoding(int64_t num_hiddens, double dropout_p, int64_t max_len)
    : Module("PositionalEncoding"), dropout(dropout_p) {
  AG_CHECK(num_hiddens > 0 && num_hiddens % 2 == 0 && max_len > 0, "PositionalEncoding",
           "num_hiddens must be even and positive (sin and cos pairs) and max_len positive, got " +
               std::to_string(num_hiddens) + " and " + std::to_string(max_len));
  register_module("dropout", &dropout);
  // P[0, i, 2j] = sin(i / 10000^(2j/d)), P[0, i, 2j+1] = cos(i / 10000^(2j/d))
  std::vector<double> table(static_cast<size_t>(max_len * num_hiddens));
  for (int64_t i = 0; i < max_len; ++i) {
    for (int64_t j = 0; j < num_hiddens; j += 2) {
      const double angle =
          static_cast<double>(i) /
          std::pow(10000.0, static_cast<double>(j) / static_cast<double>(num_hiddens));
      table[static_cast<size_t>(i * num_hiddens + j)] = std::sin(angle);
      table[static_cast<size_t>(i * num_hiddens + j + 1)] = std::cos(angle);
    }
  }
  P = tensor(std::move(table), {1, max_len, num_hiddens}, kFloat64);
}

// X [B, T, d] -> dropout(X + P[:, offset : offset + T]) [B, T, d]
Tensor PositionalEncoding::forward(const Tensor& X, int64_t offset) const {
  check_floating(X, "PositionalEncoding", "X");
  const int64_t max_len = P.size(1), d = P.size(2);
  AG_CHECK(X.dim() == 3 && X.size(2) == d, "PositionalEncoding",
           "expected X [B, T, " + std::to_string(d) + "], got " + shape_str(X.shape()));
  AG_CHECK(offset >= 0 && offset + X.size(1) <= max_len, "PositionalEncoding",
           "positions " + std::to_string(offset) + " .. " + std::to_string(offset + X.size(1) - 1) +
               " are beyond max_len " + std::to_string(max_len));
  // P[:, offset : offset + T]: [1, T, d], broadcast over the batch
  const Tensor positions = narrow(P, 1, offset, X.size(1)).to(X.dtype());
  return dropout(X + positions);
}

// ---- the encoder -----------------------------------------------------------------------------

TransformerEncoderBlock::TransformerEncoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens,
                                                 int64_t num_heads, double dropout, bool use_bias,
                                                 bool norm_first)
    : Module("TransformerEncoderBlock"),
      norm_first(norm_first),
      attention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, dropout, use_bias),
      addnorm1({num_hiddens}, dropout),
      ffn(num_hiddens, ffn_num_hiddens, num_hiddens),
      addnorm2({num_hiddens}, dropout) {
  register_module("attention", &attention);
  register_module("addnorm1", &addnorm1);
  register_module("ffn", &ffn);
  register_module("addnorm2", &addnorm2);
}

// X [B, T, d] -> [B, T, d]
Tensor TransformerEncoderBlock::forward(const Tensor& X, const Tensor& valid_lens) {
  // Self-attention: every source step attends to the valid source steps.
  if (norm_first) {  // Y = X + attention(ln1(X)), out = Y + ffn(ln2(Y))
    const Tensor N = addnorm1.ln(X);
    const Tensor Y = addnorm1.add(X, attention(N, N, N, valid_lens));
    return addnorm2.add(Y, ffn(addnorm2.ln(Y)));
  }
  const Tensor Y = addnorm1(X, attention(X, X, X, valid_lens));
  return addnorm2(Y, ffn(Y));
}

TransformerEncoder::TransformerEncoder(int64_t vocab_size, int64_t num_hiddens,
                                       int64_t ffn_num_hiddens, int64_t num_heads, int64_t num_blks,
                                       double dropout, bool use_bias, bool norm_first)
    : Encoder("TransformerEncoder"),
      num_hiddens(num_hiddens),
      embedding(vocab_size, num_hiddens),
      pos_encoding(num_hiddens, dropout) {
  AG_CHECK(num_blks > 0, "TransformerEncoder",
           "num_blks must be positive, got " + std::to_string(num_blks));
  register_module("embedding", &embedding);
  register_module("pos_encoding", &pos_encoding);
  register_module("blks", &blks);
  for (int64_t i = 0; i < num_blks; ++i)
    blks.add_module("block" + std::to_string(i),
                    std::make_unique<TransformerEncoderBlock>(
                        num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias, norm_first));
  if (norm_first) {
    norm = std::make_unique<LayerNorm>(Shape{num_hiddens});
    register_module("norm", norm.get());
  }
}

// src [B, T] int64, src_valid_lens [B] -> {enc_outputs [B, T, d]}
std::vector<Tensor> TransformerEncoder::forward(const Tensor& src, const Tensor& src_valid_lens) {
  check_tokens(src, "src", type_name());
  check_source_lens(src_valid_lens, src.size(0), src.size(1), type_name());
  // The embedding values are ~N(0, 1) but the positional encoding is in
  // [-1, 1]: scaling by sqrt(d) keeps the tokens from drowning in it (d2l).
  // [B, T] -> [B, T, d]
  Tensor X = pos_encoding(embedding(src) * std::sqrt(static_cast<double>(num_hiddens)));
  for (size_t i = 0; i < blks.size(); ++i) X = blks[i].forward(X, src_valid_lens);
  if (norm) X = (*norm)(X);  // pre-LN: the residual stream normalised once, at the end
  return {X};
}

std::vector<Tensor> TransformerEncoder::attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blks.size(); ++i) weights.push_back(blks[i].attention.attention_weights());
  return weights;
}

void TransformerEncoder::set_need_weights(bool need_weights) {
  for (size_t i = 0; i < blks.size(); ++i) blks[i].attention.need_weights = need_weights;
}

// ---- the decoder -----------------------------------------------------------------------------

TransformerDecoderBlock::TransformerDecoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens,
                                                 int64_t num_heads, double dropout, int64_t i,
                                                 bool norm_first)
    : Module("TransformerDecoderBlock"),
      i(i),
      norm_first(norm_first),
      attention1(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, dropout),
      addnorm1({num_hiddens}, dropout),
      attention2(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, dropout),
      addnorm2({num_hiddens}, dropout),
      ffn(num_hiddens, ffn_num_hiddens, num_hiddens),
      addnorm3({num_hiddens}, dropout) {
  register_module("attention1", &attention1);
  register_module("addnorm1", &addnorm1);
  register_module("attention2", &attention2);
  register_module("addnorm2", &addnorm2);
  register_module("ffn", &ffn);
  register_module("addnorm3", &addnorm3);
}

// X [B, Tout, d] -> [B, Tout, d]
Tensor TransformerDecoderBlock::forward(const Tensor& X, DecoderState& state, bool causal) {
  AG_CHECK(X.defined() && X.dim() == 3, type_name().c_str(),
           "expected X [B, Tout, d], got " + (X.defined() ? shape_str(X.shape()) : "none"));
  AG_CHECK(state.tensors.size() == 2 && static_cast<int64_t>(state.key_values.size()) > i,
           type_name().c_str(),
           "block " + std::to_string(i) + " needs a state from TransformerDecoder::init_state");
  const Tensor& enc_outputs = state.tensors[0];
  const Tensor& enc_valid_lens = state.tensors[1];
  Tensor& cached = state.key_values[static_cast<size_t>(i)];
  // What self-attention reads of X: X itself, or pre-LN's ln1(X). Its keys
  // and values: the steps before X (cached), then X's.
  // [B, offset, d] ++ [B, Tout, d] -> [B, offset + Tout, d]
  const Tensor Q = norm_first ? addnorm1.ln(X) : X;
  const int64_t B = X.size(0), steps = X.size(1), offset = cached.defined() ? cached.size(1) : 0;
  const Tensor key_values = cached.defined() ? cat({cached, Q}, 1) : Q;
  cached = key_values;
  // The look-ahead mask as d2l writes it, valid lengths per query row
  // [B, Tout]: step s (position offset + s) sees the offset + s + 1 keys up
  // to itself. In training (offset 0) every row is [1, 2, ..., Tout].
  Tensor dec_valid_lens;
  if (causal) {
    std::vector<double> lens(static_cast<size_t>(B * steps));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < steps; ++s)
        lens[static_cast<size_t>(b * steps + s)] = static_cast<double>(offset + s + 1);
    dec_valid_lens = tensor(std::move(lens), {B, steps}, kInt64);
  }
  if (norm_first) {  // Y = X + self(ln1 X), Z = Y + cross(ln2 Y), out = Z + ffn(ln3 Z)
    const Tensor Y = addnorm1.add(X, attention1(Q, key_values, key_values, dec_valid_lens));
    const Tensor N = addnorm2.ln(Y);
    const Tensor Z = addnorm2.add(Y, attention2(N, enc_outputs, enc_outputs, enc_valid_lens));
    return addnorm3.add(Z, ffn(addnorm3.ln(Z)));
  }
  // Self-attention over the target steps so far.
  const Tensor Y = addnorm1(X, attention1(X, key_values, key_values, dec_valid_lens));
  // Encoder-decoder attention: queries from the target, keys and values the
  // encoder outputs [B, T, d], the source padding masked.
  const Tensor Z = addnorm2(Y, attention2(Y, enc_outputs, enc_outputs, enc_valid_lens));
  return addnorm3(Z, ffn(Z));
}

TransformerDecoder::TransformerDecoder(int64_t vocab_size, int64_t num_hiddens,
                                       int64_t ffn_num_hiddens, int64_t num_heads, int64_t num_blks,
                                       double dropout, bool norm_first)
    : Decoder("TransformerDecoder"),
      num_hiddens(num_hiddens),
      embedding(vocab_size, num_hiddens),
      pos_encoding(num_hiddens, dropout),
      dense(num_hiddens, vocab_size) {
  AG_CHECK(num_blks > 0, "TransformerDecoder",
           "num_blks must be positive, got " + std::to_string(num_blks));
  register_module("embedding", &embedding);
  register_module("pos_encoding", &pos_encoding);
  register_module("blks", &blks);
  for (int64_t i = 0; i < num_blks; ++i)
    blks.add_module("block" + std::to_string(i),
                    std::make_unique<TransformerDecoderBlock>(num_hiddens, ffn_num_hiddens,
                                                              num_heads, dropout, i, norm_first));
  register_module("dense", &dense);
  if (norm_first) {
    norm = std::make_unique<LayerNorm>(Shape{num_hiddens});
    register_module("norm", norm.get());
  }
}

// {enc_outputs [B, T, d]}, src_valid_lens [B] -> {enc_outputs, src_valid_lens},
// one empty key/value cache per block
DecoderState TransformerDecoder::init_state(const std::vector<Tensor>& enc_outputs,
                                            const Tensor& src_valid_lens) {
  AG_CHECK(enc_outputs.size() == 1 && enc_outputs[0].defined() && enc_outputs[0].dim() == 3 &&
               enc_outputs[0].size(2) == num_hiddens,
           type_name().c_str(),
           "expected the encoder's one output [B, T, " + std::to_string(num_hiddens) + "], got " +
               std::to_string(enc_outputs.size()) + " tensors" +
               (enc_outputs.size() == 1 && enc_outputs[0].defined()
                    ? " of shape " + shape_str(enc_outputs[0].shape())
                    : std::string()));
  check_source_lens(src_valid_lens, enc_outputs[0].size(0), enc_outputs[0].size(1), type_name());
  DecoderState state;
  state.tensors = {enc_outputs[0], src_valid_lens};
  state.key_values.resize(blks.size());
  return state;
}

void TransformerDecoder::select_state(DecoderState& state, const Tensor& rows) const {
  AG_CHECK(state.tensors.size() == 2 && state.key_values.size() == blks.size() &&
               state.tensors[0].defined(),
           "TransformerDecoder.select_state",
           "the state does not come from this decoder's init_state");
  for (Tensor& t : state.tensors)
    if (t.defined()) t = index_select(t, 0, rows);
  for (Tensor& cached : state.key_values)  // [B, steps so far, d]
    if (cached.defined()) cached = index_select(cached, 0, rows);
}

// tgt [B, Tout] int64 -> logits [B, Tout, V]
Tensor TransformerDecoder::forward(const Tensor& tgt, DecoderState& state) {
  check_tokens(tgt, "tgt", type_name());
  AG_CHECK(state.tensors.size() == 2 && state.key_values.size() == blks.size() &&
               state.tensors[0].defined(),
           type_name().c_str(), "the state does not come from this decoder's init_state");
  const int64_t B = tgt.size(0);
  AG_CHECK(state.tensors[0].size(0) == B, type_name().c_str(),
           "tgt " + shape_str(tgt.shape()) + " and the encoder outputs " +
               shape_str(state.tensors[0].shape()) + " differ in batch size");
  const Tensor& cached = state.key_values[0];
  AG_CHECK(!cached.defined() || cached.size(0) == B, type_name().c_str(),
           "tgt " + shape_str(tgt.shape()) + " and the cached steps " + shape_str(cached.shape()) +
               " differ in batch size");
  const int64_t offset = cached.defined() ? cached.size(1) : 0;
  // [B, Tout] -> [B, Tout, d], positions offset .. offset + Tout - 1
  Tensor X = pos_encoding(embedding(tgt) * std::sqrt(static_cast<double>(num_hiddens)), offset);
  for (size_t i = 0; i < blks.size(); ++i) X = blks[i].forward(X, state, causal);
  if (norm) X = (*norm)(X);
  // The last block's cross-attention [B, H, Tout, T], averaged over the heads.
  const Tensor& cross = blks[blks.size() - 1].attention2.attention_weights();
  alignment_ = cross.defined() ? mean(cross.detach(), 1) : Tensor();
  // [B, Tout, d] -> [B, Tout, V]
  return dense(X);
}

std::vector<Tensor> TransformerDecoder::self_attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blks.size(); ++i)
    weights.push_back(blks[i].attention1.attention_weights());
  return weights;
}

std::vector<Tensor> TransformerDecoder::cross_attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blks.size(); ++i)
    weights.push_back(blks[i].attention2.attention_weights());
  return weights;
}

void TransformerDecoder::set_need_weights(bool need_weights) {
  for (size_t i = 0; i < blks.size(); ++i) {
    blks[i].attention1.need_weights = need_weights;
    blks[i].attention2.need_weights = need_weights;
  }
}

// ---- the model -------------------------------------------------------------------------------

Transformer::Transformer(std::unique_ptr<TransformerEncoder> encoder,
                         std::unique_ptr<TransformerDecoder> decoder)
    : EncoderDecoder(std::move(encoder), std::move(decoder)),
      encoder_(&static_cast<TransformerEncoder&>(EncoderDecoder::encoder())),
      decoder_(&static_cast<TransformerDecoder&>(EncoderDecoder::decoder())) {}

void Transformer::set_need_weights(bool need_weights) {
  encoder_->set_need_weights(need_weights);
  decoder_->set_need_weights(need_weights);
}

std::unique_ptr<Transformer> make_transformer(int64_t src_vocab, int64_t tgt_vocab,
                                              int64_t num_hiddens, int64_t ffn_num_hiddens,
                                              int64_t num_heads, int64_t num_blks, double dropout,
                                              bool norm_first) {
  // The encoder first (arguments are evaluated in no fixed order): a bad
  // size is reported by the encoder.
  auto encoder = std::make_unique<TransformerEncoder>(src_vocab, num_hiddens, ffn_num_hiddens,
                                                      num_heads, num_blks, dropout,
                                                      /*use_bias=*/false, norm_first);
  auto decoder = std::make_unique<TransformerDecoder>(tgt_vocab, num_hiddens, ffn_num_hiddens,
                                                      num_heads, num_blks, dropout, norm_first);
  return std::make_unique<Transformer>(std::move(encoder), std::move(decoder));
}

}  // namespace ag::nn
