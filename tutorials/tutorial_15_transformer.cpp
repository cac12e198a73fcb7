// Tutorial 15 — The Transformer and its masks.
//
// d2l's section "The Transformer Architecture", seen through its two masks:
// the padding mask (keys past a sequence's valid length) and the decoder's
// look-ahead mask (a target step must not see the steps after it). Both are
// built from valid lengths and drawn; one decoder block is computed by hand
// and compared with the module; two Transformers learn to reverse digit
// strings, one with the look-ahead mask and one without, and the unmasked one
// is caught cheating; last, every head's attention map of the trained model.
//
// Legend: B batch, T source steps, Tout target steps, d = num_hiddens,
// H heads, V vocabulary.
//
// Run: build/tutorial_15_transformer [--no-pause] [--out DIR]
#include <attograd/translate/train.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "tutorial.h"

namespace {

namespace tr = ag::translate;

// x W^T (+ b): a Linear layer written out. x [..., in], W [out, in], b [out].
ag::Tensor affine(const ag::Tensor& x, const ag::Tensor& W, const ag::Tensor& b = ag::Tensor()) {
  const ag::Tensor y = ag::matmul(x, ag::transpose(W, 0, 1));
  return b.defined() ? y + b : y;
}

// Layer normalization over the last axis, written out:
// (x - mean) / sqrt(biased variance + eps) * weight + bias.
ag::Tensor layer_norm_by_hand(const ag::Tensor& x, const ag::nn::LayerNorm& ln) {
  const ag::Tensor centred = x - ag::mean(x, -1, true);
  const ag::Tensor variance = ag::mean(centred * centred, -1, true);
  return centred / ag::sqrt(variance + ln.eps) * ln.weight + ln.bias;
}

// Multi-head attention written out (tutorial 9), with a bool keep mask
// broadcastable to [B, H, Tq, Tk]: project, split the heads, scaled dot
// product, masked softmax, join the heads, project.
ag::Tensor multihead_by_hand(const ag::nn::MultiHeadAttention& mha, const ag::Tensor& queries,
                             const ag::Tensor& keys_values, const ag::Tensor& keep) {
  const int64_t B = queries.size(0), Tq = queries.size(1), Tk = keys_values.size(1);
  const int64_t h = mha.W_q.weight.size(0), H = mha.num_heads, dh = h / H;
  const auto heads = [&](const ag::Tensor& x, int64_t steps) {  // [B, T, h] -> [B, H, T, dh]
    return ag::permute(ag::reshape(x, {B, steps, H, dh}), {0, 2, 1, 3});
  };
  const ag::Tensor Q = heads(affine(queries, mha.W_q.weight), Tq);
  const ag::Tensor K = heads(affine(keys_values, mha.W_k.weight), Tk);
  const ag::Tensor V = heads(affine(keys_values, mha.W_v.weight), Tk);
  const ag::Tensor scores = ag::matmul(Q, ag::transpose(K, 2, 3)) / std::sqrt(double(dh));
  const ag::Tensor weights =
      ag::nn::masked_softmax_keep(scores, keep, ag::nn::MaskedRows::Uniform);  // [B, H, Tq, Tk]
  const ag::Tensor joined =
      ag::reshape(ag::permute(ag::matmul(weights, V), {0, 2, 1, 3}), {B, Tq, h});
  return affine(joined, mha.W_o.weight);
}

// Training steps per model: 300 take about 25 s each on one thread (Release).
// Under the sanitizers (~10x slower) the runs are a token 30 steps, too few
// to learn reversing, so there the tutorial skips the checks of what training
// reaches (the masks, the block by hand and the maps are checked as always).
#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t kSteps = 30;
constexpr bool kTrainedChecks = false;
#else
constexpr int64_t kSteps = 300;
constexpr bool kTrainedChecks = true;
#endif

// The decoder's input under teacher forcing: <bos>, then the target shifted
// right by one. tgt int64 [B, Tout] -> [B, Tout].
ag::Tensor decoder_input(const ag::Tensor& tgt) {
  const int64_t B = tgt.size(0), Tout = tgt.size(1);
  return ag::cat(
      {ag::full({B, 1}, double(tr::Vocab::kBos), ag::kInt64), ag::narrow(tgt, 1, 0, Tout - 1)}, 1);
}

struct Run {
  std::unique_ptr<ag::nn::Transformer> model;
  double train_loss = 0;  // per target token, averaged over the last fifth of the steps
  double accuracy = 0;    // held-out exact match, greedy decoding
  double forced = 0;      // held-out tokens right when fed the true target (teacher forcing)
};

// Trains make_transformer's model (d 32, FFN 64, 4 heads, 2 blocks; dropout
// 0, which learns faster in a short run) on `data` with or without the
// look-ahead mask: batches of 64, teacher forcing, masked cross-entropy,
// gradients clipped to norm 1, Adam 0.01.
Run train_reverse(const tr::Dataset& data, bool causal) {
  ag::manual_seed(15);
  Run run;
  run.model = ag::nn::make_transformer(data.src_vocab().size(), data.tgt_vocab().size(), 32, 64, 4,
                                       2, /*dropout=*/0.0);
  run.model->transformer_decoder().causal = causal;
  ag::optim::Adam adam(run.model->parameters(), 0.01);
  tr::BatchIterator batches(data, 64, /*seed=*/15);
  double tail_loss = 0;
  int64_t tail_steps = 0;
  run.model->train();
  for (int64_t step = 1; step <= kSteps; ++step) {
    const tr::Batch b = batches.next();
    const int64_t Tout = b.tgt.size(1);
    const ag::Tensor loss = ag::sum(ag::nn::masked_softmax_ce_loss(
        (*run.model)(b.src, decoder_input(b.tgt), b.src_valid_len), b.tgt, b.tgt_valid_len));
    adam.zero_grad();
    loss.backward();
    ag::nn::clip_grad_norm_(run.model->parameters(), 1.0);
    adam.step();
    // the loss averages over all Tout steps of each row: per valid token instead
    const double per_token = loss.item() * double(Tout) / ag::sum(b.tgt_valid_len).item();
    if (step > kSteps - kSteps / 5) {
      tail_loss += per_token;
      ++tail_steps;
    }
    if (step % (kSteps / 4) == 0)
      std::cout << "  step " << tut::num(double(step), "%4.0f") << "/" << kSteps
                << "   loss per token " << tut::num(per_token, "%.4f") << std::endl;
  }
  run.train_loss = tail_loss / double(tail_steps);
  // Held-out exact match, greedy: one step at a time, each step fed the last
  // output; a single step sees only the past, with the mask or without.
  std::vector<const tr::Example*> heldout;
  for (const tr::Example& e : data.heldout()) heldout.push_back(&e);
  const tr::Batch h = tr::make_batch(heldout, data.src_vocab(), data.tgt_vocab(), data.src_steps(),
                                     data.tgt_steps());
  const std::vector<tr::Prediction> predictions =
      tr::predict_seq2seq(*run.model, h.src, h.src_valid_len, data.tgt_steps());
  int64_t right = 0;
  for (size_t i = 0; i < predictions.size(); ++i)
    right += predictions[i].finished &&
             tr::detokenize_chars(data.tgt_vocab().tokens(predictions[i].output)) ==
                 data.heldout()[i].target;
  run.accuracy = double(right) / double(predictions.size());
  // The same held-out strings with the true target fed at once, as in
  // training: the fraction of valid target tokens predicted right.
  {
    ag::NoGradGuard no_grad;
    run.model->eval();
    const std::vector<double> predicted =
        ag::argmax((*run.model)(h.src, decoder_input(h.tgt), h.src_valid_len), -1).to_vector();
    const std::vector<double> truth = h.tgt.to_vector(), lengths = h.tgt_valid_len.to_vector();
    const size_t steps = static_cast<size_t>(h.tgt.size(1));
    double hits = 0, tokens = 0;
    for (size_t i = 0; i < lengths.size(); ++i)
      for (size_t s = 0; s < static_cast<size_t>(lengths[i]); ++s, ++tokens)
        hits += predicted[i * steps + s] == truth[i * steps + s];
    run.forced = hits / tokens;
  }
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 15, "The Transformer and its masks");
  ag::manual_seed(15);
  ag::set_num_threads(1);  // the same numbers on every machine, and the minute's budget

  t.step("The padding mask and the look-ahead mask",
         "Two source sentences padded to T = 6 steps, valid lengths 3 and 5: a key past "
         "its sentence's length is padding, and no query may look at it (the padding mask, "
         "from the source valid lengths: keep[b, j] = j < len[b]). In the decoder's "
         "self-attention, target step i may look at steps 0..i only: the rest is the "
         "future, unknown at prediction (the look-ahead mask: keep[i, j] = j <= i; d2l "
         "writes it as valid lengths 1, 2, ..., Tout per query row). A decoder query over "
         "a padded target obeys both. Each map below is a softmax of random scores under "
         "one mask; hatched cells are masked.");
  const int64_t T = 6;
  const ag::Tensor lens = ag::tensor({3, 5}, {2}, ag::kInt64);
  const ag::Tensor padding = ag::unsqueeze(ag::nn::sequence_mask(lens, T), 1);  // [B, 1, T]
  const ag::Tensor look_ahead = ag::nn::causal_mask(T, T);                      // [T, T]
  // d2l's form of the look-ahead mask: valid lengths 1..T per query row.
  const ag::Tensor row_lens =
      ag::expand(ag::reshape(ag::arange(T, ag::kInt64) + 1, {1, T}), {2, T});
  t.check("the look-ahead mask is sequence_mask of the row lengths 1, 2, ..., T",
          tut::max_abs_diff(ag::nn::sequence_mask(row_lens, T).to(ag::kFloat32),
                            ag::unsqueeze(look_ahead, 0).to(ag::kFloat32)) == 0.0);
  const ag::Tensor both = ag::logical_and(padding, look_ahead);  // [B, T, T]
  t.show("padding keep mask [B, 1, T]", padding.to(ag::kInt64));
  t.show("look-ahead keep mask [T, T]", look_ahead.to(ag::kInt64));
  const ag::Tensor scores = ag::randn({2, T, T});
  const ag::Tensor w_padding =
      ag::nn::masked_softmax_keep(scores, padding, ag::nn::MaskedRows::Uniform);
  const ag::Tensor w_ahead =
      ag::nn::masked_softmax_keep(scores, look_ahead, ag::nn::MaskedRows::Uniform);
  const ag::Tensor w_both = ag::nn::masked_softmax_keep(scores, both, ag::nn::MaskedRows::Uniform);
  t.check("padding: zero weight on padded keys, rows sum to one",
          tut::masked_weight(w_padding, padding) == 0.0 && tut::row_sum_error(w_padding) < 1e-6);
  t.check("look-ahead: zero weight on the future, rows sum to one",
          tut::masked_weight(w_ahead, look_ahead) == 0.0 && tut::row_sum_error(w_ahead) < 1e-6);
  t.check("both: zero weight on padding and on the future",
          tut::masked_weight(w_both, both) == 0.0);
  // By loops (tutorial.h), no attograd op: every mask here keeps a prefix of
  // each row's keys, len[b] of them (padding), i + 1 (look-ahead) or the
  // smaller of the two (both), and the row is the softmax of those scores.
  std::vector<int64_t> keep_padding, keep_ahead, keep_both;
  for (const int64_t len : {3, 5})
    for (int64_t i = 0; i < T; ++i) {
      keep_padding.push_back(len);
      keep_ahead.push_back(i + 1);
      keep_both.push_back(std::min(len, i + 1));
    }
  const double masks_diff =
      std::max({tut::max_abs_diff(w_padding, tut::softmax_by_loops(scores, keep_padding)),
                tut::max_abs_diff(w_ahead, tut::softmax_by_loops(scores, keep_ahead)),
                tut::max_abs_diff(w_both, tut::softmax_by_loops(scores, keep_both))});
  t.check(
      "each map is the softmax of its row's first len, i + 1 or min(len, i + 1) scores, by loops",
      masks_diff < 1e-6, "max |difference| " + tut::num(masks_diff));
  // Grid [masks, items, T, T]: rows padding / look-ahead / both, columns the two items.
  const ag::Tensor maps = ag::stack({w_padding, w_ahead, w_both}, 0);  // [3, 2, T, T]
  const ag::Tensor keeps =
      ag::stack({ag::expand(padding, {2, T, T}), ag::expand(look_ahead, {2, T, T}), both}, 0);
  t.heatmap("masks", maps, [&] {
    ag::viz::HeatmapOptions o;
    o.xlabel = "Key step";
    o.ylabel = "Query step";
    o.titles = {"padding, len 3", "padding, len 5", "look-ahead",
                "look-ahead",     "both, len 3",    "both, len 5"};
    o.keep_mask = keeps;
    o.vmin = 0.0;
    o.vmax = 1.0;
    return o;
  }());

  t.step("One decoder block, by hand and by the module",
         "A decoder block (d = 8, 2 heads, FFN 16, no dropout) on a target of Tout = 4 "
         "steps and an encoder output of T = 6 steps with valid lengths 3 and 5:\n"
         "  Y = AddNorm(X, MultiHead(X, X, X, look-ahead))       masked self-attention\n"
         "  Z = AddNorm(Y, MultiHead(Y, enc, enc, padding))      encoder-decoder attention\n"
         "  out = AddNorm(Z, FFN(Z))                             FFN(x) = W2 relu(W1 x + b1) + b2\n"
         "with AddNorm(X, Y) = LayerNorm(X + Y). Written out from the block's parameters, "
         "then the module's forward.");
  {
    ag::NoGradGuard no_grad;
    const int64_t d = 8, Tout = 4;
    ag::nn::TransformerDecoderBlock block(d, 16, 2, /*dropout=*/0.0, /*i=*/0);
    const ag::Tensor X = ag::randn({2, Tout, d});
    const ag::Tensor enc = ag::randn({2, T, d});
    const ag::Tensor self_keep = ag::nn::causal_mask(Tout, Tout);  // [Tout, Tout]
    const ag::Tensor cross_keep = ag::unsqueeze(padding, 1);       // [B, 1, 1, T]
    const auto add_norm = [](const ag::nn::AddNorm& an, const ag::Tensor& x, const ag::Tensor& y) {
      return layer_norm_by_hand(x + y, an.ln);
    };
    const ag::Tensor Y =
        add_norm(block.addnorm1, X, multihead_by_hand(block.attention1, X, X, self_keep));
    const ag::Tensor Z =
        add_norm(block.addnorm2, Y, multihead_by_hand(block.attention2, Y, enc, cross_keep));
    const ag::Tensor ffn =
        affine(ag::relu(affine(Z, block.ffn.dense1.weight, block.ffn.dense1.bias)),
               block.ffn.dense2.weight, block.ffn.dense2.bias);
    const ag::Tensor by_hand = add_norm(block.addnorm3, Z, ffn);
    ag::nn::DecoderState state;
    state.tensors = {enc, lens};
    state.key_values = {ag::Tensor()};  // no steps decoded before X
    const ag::Tensor by_module = block.forward(X, state, /*causal=*/true);
    t.show("out by hand, item 0", ag::narrow(by_hand, 0, 0, 1));
    t.show("out by the module, item 0", ag::narrow(by_module, 0, 0, 1));
    t.check("the block's output is ours", tut::max_abs_diff(by_hand, by_module) < 1e-5,
            tut::num(tut::max_abs_diff(by_hand, by_module)));
    t.check("its self-attention gives no weight to the future",
            tut::masked_weight(block.attention1.attention_weights(), self_keep) == 0.0);
    t.check("its cross-attention gives no weight to the source padding",
            tut::masked_weight(block.attention2.attention_weights(), cross_keep) == 0.0);
    // The look-ahead mask is what lets step s ignore later steps: change the
    // last target step and the earlier outputs stay the same.
    const ag::Tensor X_changed = ag::cat({ag::narrow(X, 1, 0, Tout - 1), ag::randn({2, 1, d})}, 1);
    ag::nn::DecoderState fresh{{enc, lens}, {ag::Tensor()}};
    const ag::Tensor changed = block.forward(X_changed, fresh, true);
    t.check("changing the last target step leaves the earlier outputs alone",
            tut::max_abs_diff(ag::narrow(changed, 1, 0, Tout - 1),
                              ag::narrow(by_module, 1, 0, Tout - 1)) == 0.0);
  }

  t.step("Training with and without the look-ahead mask",
         "Two Transformers (d 32, FFN 64, 4 heads, 2 blocks, no dropout) learn to reverse "
         "strings of 3 to 10 digits (\"48213\" -> \"31284\"), " +
             std::to_string(kSteps) +
             " steps each: one with the look-ahead mask, one without. Without it, target step "
             "s sees the decoder input at step s + 1 in training, which is exactly the token "
             "it must predict: it can copy. At prediction the decoder is fed its own outputs "
             "one at a time, so that token is not there yet.");
  tr::DatasetOptions data_options;
  data_options.task = "reverse";
  data_options.num_train = 20000;
  data_options.num_heldout = 200;
  const tr::Dataset data = tr::make_dataset(data_options);
  std::cout << "with the look-ahead mask:\n";
  const Run masked = train_reverse(data, /*causal=*/true);
  std::cout << "without it:\n";
  const Run unmasked = train_reverse(data, /*causal=*/false);
  std::cout << "\n                         training loss   held-out exact match\n"
            << "  with look-ahead mask   " << tut::num(masked.train_loss, "%13.4f")
            << tut::num(100 * masked.accuracy, "%20.1f") << "%\n"
            << "  without (cheating)     " << tut::num(unmasked.train_loss, "%13.4f")
            << tut::num(100 * unmasked.accuracy, "%20.1f") << "%\n"
            << "teacher-forced tokens right: with " << tut::num(100 * masked.forced, "%.1f")
            << "%, without " << tut::num(100 * unmasked.forced, "%.1f") << "%\n";
  if (kTrainedChecks) {
    // Measured over seeds 1-8 and 15 (the models' initial weights and the
    // batches): with the mask 22.5-51.5% of held-out strings exact, without
    // it 0.0% every time, though fed the true target it then gets 75.6-93.3%
    // of the tokens right (with the mask 77.3-89.4%). Which training loss is
    // lower after 300 steps varies with the seed (lower without the mask in 6
    // of 9), so the tutorial does not claim it.
    t.check("without the mask: over 70% of held-out tokens right when fed the true target",
            unmasked.forced > 0.7, tut::num(100 * unmasked.forced, "%.1f") + "%");
    t.check("but under 5% of held-out strings right when fed its own outputs",
            unmasked.accuracy < 0.05, tut::num(100 * unmasked.accuracy, "%.1f") + "%");
    t.check("with the mask the model reverses over 15 points more held-out strings",
            masked.accuracy > unmasked.accuracy + 0.15,
            tut::num(100 * masked.accuracy, "%.1f") + "% vs " +
                tut::num(100 * unmasked.accuracy, "%.1f") + "%");
  } else {
    std::cout << "(sanitizer build: " << kSteps
              << " steps, too few to learn; the checks of "
                 "the trained models run in the Release build)\n";
  }
  t.say(
      "Fed the true target, as in training, the unmasked model gets most tokens right: "
      "each is in its input one step later. Fed its own outputs, it has nothing to copy. "
      "Trained longer (build/attograd-translate --model transformer --task reverse, 4000 "
      "steps, with and without --no-causal-mask), docs/transformer.md records 100.0% of "
      "held-out strings with the mask and 0.0% without.");

  t.step("Every head's attention map",
         "The masked model on one held-out string, the whole target fed at once (teacher "
         "forcing, eval mode). Each grid is [blocks, heads, Tq, Tk]: the "
         "encoder's self-attention, the decoder's masked self-attention (nothing above the "
         "diagonal) and the encoder-decoder attention, where reversing shows as an "
         "anti-diagonal in the last block: the query at decoder input i (<bos> first), which "
         "predicts output character i, looks at source character L - 1 - i of the L "
         "characters. After this short run the pattern is only partly formed: how often each "
         "output step looks hardest at the character it copies is counted over 100 held-out "
         "strings below.");
  {
    ag::NoGradGuard no_grad;
    masked.model->eval();
    const tr::Example& example = data.heldout()[0];
    const tr::Batch b = tr::make_batch({&example}, data.src_vocab(), data.tgt_vocab(),
                                       data.src_steps(), data.tgt_steps());
    const int64_t n = b.src_valid_len.to_vector()[0];  // characters + <eos>
    (*masked.model)(b.src, decoder_input(b.tgt), b.src_valid_len);
    // Per block [1, H, *, *] -> [blocks, H, *, *], cut to the valid steps.
    const auto grid = [](const std::vector<ag::Tensor>& per_block, int64_t rows, int64_t cols) {
      std::vector<ag::Tensor> blocks;
      for (const ag::Tensor& w : per_block)
        blocks.push_back(ag::narrow(ag::narrow(ag::squeeze(w, 0), 1, 0, rows), 2, 0, cols));
      return ag::stack(blocks, 0);
    };
    const ag::Tensor enc_maps = grid(masked.model->transformer_encoder().attention_weights(), n, n);
    const ag::Tensor self_maps =
        grid(masked.model->transformer_decoder().self_attention_weights(), n, n);
    const ag::Tensor cross_maps =
        grid(masked.model->transformer_decoder().cross_attention_weights(), n, n);
    std::vector<std::string> source = tr::tokenize_chars(example.source);
    source.push_back("<eos>");
    std::vector<std::string> decoder_in = {"<bos>"};
    for (const std::string& c : tr::tokenize_chars(example.target)) decoder_in.push_back(c);
    std::vector<std::string> titles;
    for (int blk = 0; blk < 2; ++blk)
      for (int head = 0; head < 4; ++head)
        titles.push_back("block " + std::to_string(blk) + ", head " + std::to_string(head));
    std::cout << "source \"" << example.source << "\", target \"" << example.target << "\"\n";
    t.check(
        "every map is [2 blocks, 4 heads, Tq, Tk]",
        enc_maps.shape() == ag::Shape{2, 4, n, n} && cross_maps.shape() == ag::Shape{2, 4, n, n});
    t.check("the decoder's self-attention has nothing above the diagonal",
            tut::masked_weight(self_maps, ag::nn::causal_mask(n, n)) == 0.0);
    // The last block's cross-attention, averaged over the heads: output step
    // i should look most at source position n - 2 - i (the character it
    // copies; position n - 1 is <eos>).
    const ag::Tensor averaged = ag::mean(ag::narrow(cross_maps, 0, 1, 1), 1);  // [1, n, n]
    const std::vector<double> picked = ag::argmax(ag::squeeze(averaged, 0), -1).to_vector();
    int64_t on_antidiagonal = 0;
    for (int64_t i = 0; i + 1 < n; ++i) on_antidiagonal += picked[i] == double(n - 2 - i);
    std::cout << "output steps whose strongest (head-averaged) source character is the one "
                 "they copy: "
              << on_antidiagonal << " of " << n - 1 << "\n";
    // The same count over the first 100 held-out strings, against chance (a
    // step's strongest of its L + 1 source positions falling on the copied one).
    double copied = 0, chance = 0, steps = 0;
    for (size_t e = 0; e < std::min<size_t>(100, data.heldout().size()); ++e) {
      const tr::Batch one = tr::make_batch({&data.heldout()[e]}, data.src_vocab(), data.tgt_vocab(),
                                           data.src_steps(), data.tgt_steps());
      const int64_t length = one.src_valid_len.to_vector()[0];  // characters + <eos>
      (*masked.model)(one.src, decoder_input(one.tgt), one.src_valid_len);
      const ag::Tensor last = masked.model->transformer_decoder().cross_attention_weights().back();
      const std::vector<double> strongest =
          ag::argmax(ag::mean(ag::squeeze(last, 0), 0), -1).to_vector();  // [Tq]
      for (int64_t i = 0; i + 1 < length; ++i) {
        copied += strongest[i] == double(length - 2 - i);
        chance += 1.0 / double(length);
        steps += 1;
      }
    }
    std::cout << "over 100 held-out strings: " << tut::num(100 * copied / steps, "%.1f")
              << "% of output steps look hardest at the character they copy (chance "
              << tut::num(100 * chance / steps, "%.1f") << "%)\n";
    // Seeds 1-8 and 15: 43.0-59.8% against chance's 12.7%.
    if (kTrainedChecks) {
      t.check(
          "the last block's cross-attention finds the copied character twice as often as "
          "chance",
          copied > 2 * chance,
          tut::num(100 * copied / steps, "%.1f") + "% vs " +
              tut::num(100 * chance / steps, "%.1f") + "%");
    }
    t.heatmap("encoder_heads", enc_maps, [&] {
      ag::viz::HeatmapOptions o;
      o.xlabel = "Source (keys)";
      o.ylabel = "Source (queries)";
      o.titles = titles;
      o.vmin = 0.0;
      o.vmax = 1.0;
      o.xticklabels = source;
      o.yticklabels = source;
      return o;
    }());
    t.heatmap("decoder_self_heads", self_maps, [&] {
      ag::viz::HeatmapOptions o;
      o.xlabel = "Decoder input (keys)";
      o.ylabel = "Decoder input (queries)";
      o.titles = titles;
      o.keep_mask = ag::nn::causal_mask(n, n);
      o.vmin = 0.0;
      o.vmax = 1.0;
      o.xticklabels = decoder_in;
      o.yticklabels = decoder_in;
      return o;
    }());
    t.heatmap("cross_heads", cross_maps, [&] {
      ag::viz::HeatmapOptions o;
      o.xlabel = "Source (keys)";
      o.ylabel = "Decoder input (queries)";
      o.titles = titles;
      o.vmin = 0.0;
      o.vmax = 1.0;
      o.xticklabels = source;
      o.yticklabels = decoder_in;
      return o;
    }());
  }
  t.say(
      "The viewer trains this model live and draws every block's maps: attograd-viewer "
      "--scene transformer.");
  return t.finish();
}
