// Tutorial 13 — Bahdanau attention.
//
// d2l's section "The Bahdanau Attention Mechanism": a GRU encoder reads the
// source; before every target step the decoder uses its last hidden state as
// the query of additive attention over the encoder's outputs, and feeds the
// context along with the step's token. One decoding step is computed by hand
// from the model's parameters and compared with the module; then the model
// learns to rewrite dates ("Thursday, May 3, 1979" -> "1979-05-03", the
// translate library's generated task) and we look at what it aligns. Last,
// the same with dot-product attention.
//
// Legend: B batch, T source steps, Tout target steps, E embedding size,
// H hidden units, L GRU layers, V vocabulary.
//
// Run: build/tutorial_13_bahdanau [--no-pause] [--out DIR]
#include <attograd/translate/report.h>
#include <attograd/translate/train.h>

#include <iostream>

#include "tutorial.h"

namespace {

namespace tr = ag::translate;

// x W^T (+ b): a Linear layer written out. x [..., in], W [out, in], b [out].
ag::Tensor affine(const ag::Tensor& x, const ag::Tensor& W, const ag::Tensor& b = ag::Tensor()) {
  const ag::Tensor y = ag::matmul(x, ag::transpose(W, 0, 1));
  return b.defined() ? y + b : y;
}

// One GRU layer, one step, as torch.nn.GRU computes it (gates in the order
// r, z, n along the 3H rows): x [B, in], h [B, H] -> h' [B, H]. The two
// linear sides here; the gates by the library's reference, the plain code
// that ATTOGRAD_REFERENCE=1 runs in place of the fused kernel:
//   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)      reset gate
//   z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)      update gate
//   n = tanh(W_in x + b_in + r * (W_hn h + b_hn))   candidate
//   h' = (1 - z) * n + z * h
ag::Tensor gru_cell(const ag::nn::GRU& gru, int64_t layer, const ag::Tensor& x,
                    const ag::Tensor& h) {
  const size_t l = static_cast<size_t>(layer);
  const ag::Tensor gi = affine(x, gru.weight_ih[l], gru.bias_ih[l]);  // [B, 3H]
  const ag::Tensor gh = affine(h, gru.weight_hh[l], gru.bias_hh[l]);  // [B, 3H]
  return ag::reference::gru_cell(gi, gh, h);  // the gates, one op each (core/src/ops_rnn.cpp)
}

// Training steps per model: 250 take about half a minute each on one thread
// (Release). Under the sanitizers (~10x slower) the runs are a token 20 steps:
// far too few to learn dates, so there the tutorial checks the hand-computed
// step and draws the maps, and skips the checks of what training reaches.
#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t kSteps = 20;
constexpr bool kTrainedChecks = false;
#else
constexpr int64_t kSteps = 250;
constexpr bool kTrainedChecks = true;
#endif

// Trains a model with `attention` on the dates, printing a progress line
// every fifth of the run; returns the translator.
tr::Translator train_dates(const tr::Dataset& data, const std::string& attention, int64_t steps) {
  tr::ModelConfig config;  // d2l's sizes: E = 32, H = 32, L = 2, dropout 0.1
  config.attention = attention;
  tr::Translator translator = tr::make_translator(config, data);
  tr::TrainOptions options;  // batch 64, Adam lr 0.005, gradients clipped at norm 1
  options.steps = steps;
  tr::train_seq2seq(translator, data, options, [](const tr::StepInfo& info) {
    if (info.step % (info.steps / 5) == 0 || info.step == 1)
      std::cout << "step " << tut::num(double(info.step), "%4.0f") << "/" << info.steps
                << "   loss per token " << tut::num(info.loss, "%.4f") << "   "
                << tut::num(info.seconds, "%.1f") << " s" << std::endl;
  });
  return translator;
}

// What evaluate()'s alignment figure would be if attention were uniform over
// the source characters and <eos>: per date, each output digit's weight on
// its field is the field's share of the source (4 year digits, 2 month, 2 day).
double uniform_alignment(const std::vector<tr::Example>& examples) {
  double total = 0;
  for (const tr::Example& e : examples) {
    const double keys = double(e.source.size() + 1);
    double digits_weight = 0;
    for (const tr::FieldSpan& span : e.spans) {
      const double digits = span.field == tr::DateField::Year ? 4 : 2;
      digits_weight += digits * double(span.end - span.begin) / keys;
    }
    total += digits_weight / 8;
  }
  return total / double(examples.size());
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 13, "Bahdanau attention");
  ag::manual_seed(13);
  ag::set_num_threads(1);  // the same numbers on every machine, and the minute's budget

  t.step("The task: dates",
         "The translate library generates the data, no download: a date written in one "
         "of many formats, to be rewritten as YYYY-MM-DD. Character level: each character "
         "is a token; <eos> ends a sequence and <pad> fills it to a fixed length. The "
         "held-out dates never appear in training.");
  tr::DatasetOptions data_options;
  data_options.num_train = 20000;
  data_options.num_heldout = 200;
  const tr::Dataset data = tr::make_dataset(data_options);
  for (size_t i = 0; i < 4; ++i)
    std::cout << "  \"" << data.train()[i].source << "\"  ->  \"" << data.train()[i].target
              << "\"\n";
  std::cout << "source vocabulary " << data.src_vocab().size() << " tokens, target "
            << data.tgt_vocab().size() << "; src_steps " << data.src_steps() << ", tgt_steps "
            << data.tgt_steps() << "\n";

  {  // one step of the untrained model, by hand: no gradients needed
    t.step("The encoder",
           "An embedding (E = 32) and a 2-layer GRU (H = 32) read the source. Its outputs "
           "[T, B, H], the last layer's state at every source step, become the keys and the "
           "values of the attention; its final state [L, B, H] starts the decoder.");
    tr::ModelConfig config;  // additive attention, d2l's sizes
    tr::Translator untrained = tr::make_translator(config, data);
    untrained.model->eval();  // no dropout: the hand computation below is exact
    auto& encoder = dynamic_cast<ag::nn::Seq2SeqEncoder&>(untrained.model->encoder());
    auto& decoder = dynamic_cast<ag::nn::Seq2SeqAttentionDecoder&>(untrained.model->decoder());
    const tr::Example& example = data.heldout()[0];
    const auto [src, src_valid_len] =
        tr::encode_sources({example.source}, data.src_vocab(), data.src_steps());
    std::cout << "source \"" << example.source << "\": " << src_valid_len.item()
              << " tokens with <eos>, padded to " << src.size(1) << "\n";
    ag::NoGradGuard no_grad;
    const std::vector<ag::Tensor> encoded = encoder.forward(src, src_valid_len);
    t.show("encoder outputs (first 3 steps, first 6 units)",
           ag::narrow(ag::narrow(encoded[0], 0, 0, 3), 2, 0, 6));
    t.check("outputs [T, 1, 32] and state [2, 1, 32]",
            encoded[0].shape() == ag::Shape{data.src_steps(), 1, 32} &&
                encoded[1].shape() == ag::Shape{2, 1, 32});
    t.check("the last output step is the top layer's final state",
            tut::max_abs_diff(ag::narrow(encoded[0], 0, data.src_steps() - 1, 1),
                              ag::narrow(encoded[1], 0, 1, 1)) == 0.0);

    t.step("The decoder's query",
           "Before each target step the decoder asks: which source characters matter now? "
           "The question is its last layer's hidden state, q = s_{t-1} [B, 1, H]; for the "
           "first step that is the encoder's final state.");
    ag::nn::DecoderState state = decoder.init_state(encoded, src_valid_len);
    const ag::Tensor enc_outputs = state.tensors[0];                               // [B, T, H]
    const ag::Tensor hidden = state.tensors[1];                                    // [L, B, H]
    const ag::Tensor query = ag::permute(ag::narrow(hidden, 0, 1, 1), {1, 0, 2});  // [B, 1, H]
    t.show("query (first 6 units)", ag::narrow(query, 2, 0, 6));

    t.step("The context, by additive attention",
           "Additive attention (tutorial 5) scores each source step j: a(q, k_j) = w_v^T "
           "tanh(W_q q + W_k k_j), the keys being the encoder outputs. A masked softmax over "
           "the valid source steps gives the weights; the context is their weighted sum of "
           "the encoder outputs (keys = values). Written out from the module's parameters:");
    ag::nn::ScoringFunction& additive = *decoder.attention;  // the table's "additive"
    // w_v . tanh(W_q q + W_k k_j) by d2l's broadcast: the library's reference
    // of the fused scores, [B, 1, 1, H] + [B, 1, T, H] -> [B, 1, T]
    const ag::Tensor scores = ag::reference::additive_scores(
        affine(query, additive.parameter("W_q.weight")),
        affine(enc_outputs, additive.parameter("W_k.weight")),
        ag::reshape(additive.parameter("w_v.weight"), {-1}));                  // [B, 1, T]
    const ag::Tensor weights = ag::nn::masked_softmax(scores, src_valid_len);  // [B, 1, T]
    const ag::Tensor context = ag::matmul(weights, enc_outputs);               // [B, 1, H]
    t.show("weights over the source (untrained: nearly uniform)", weights);
    t.show("context (first 6 units)", ag::narrow(context, 2, 0, 6));

    t.step("One decoding step, by hand and by the module",
           "The step's input is cat(context, embedding(<bos>)) [B, H + E]; two GRU cells "
           "update the hidden state layer by layer; a Linear layer turns the top state into "
           "scores over the target vocabulary. Then the module does the same step: "
           "decoder(<bos>, state).");
    const ag::Tensor bos = ag::tensor({double(tr::Vocab::kBos)}, {1, 1}, ag::kInt64);  // [B, 1]
    const ag::Tensor embedded =
        ag::index_select(decoder.embedding.weight, 0, ag::reshape(bos, {1}));  // [B, E]
    ag::Tensor x = ag::cat({ag::squeeze(context, 1), embedded}, -1);           // [B, H + E]
    std::vector<ag::Tensor> new_hidden;
    for (int64_t layer = 0; layer < 2; ++layer) {
      x = gru_cell(decoder.rnn, layer, x, ag::squeeze(ag::narrow(hidden, 0, layer, 1), 0));
      new_hidden.push_back(x);  // the next layer's input is this layer's new state
    }
    const ag::Tensor logits_by_hand =
        affine(x, decoder.dense.weight, decoder.dense.bias);  // [B, V]
    const ag::Tensor logits = decoder.forward(bos, state);    // [B, 1, V]
    t.show("logits by hand (first 8)", ag::narrow(logits_by_hand, 1, 0, 8));
    t.show("logits by the module (first 8)", ag::narrow(ag::squeeze(logits, 1), 1, 0, 8));
    t.check("the module's attention weights are ours",
            tut::max_abs_diff(decoder.alignment(), weights) < 1e-6);
    t.check("the module's logits are ours",
            tut::max_abs_diff(ag::squeeze(logits, 1), logits_by_hand) < 1e-5,
            tut::num(tut::max_abs_diff(ag::squeeze(logits, 1), logits_by_hand)));
    t.check("and so is its new hidden state",
            tut::max_abs_diff(state.tensors[1], ag::stack(new_hidden, 0)) < 1e-6);
  }

  t.step("Training on dates",
         std::to_string(kSteps) +
             " steps of d2l's train_seq2seq: teacher forcing (the decoder reads <bos> and the "
             "target shifted right), the masked cross-entropy, gradients clipped to norm 1, "
             "Adam, batches of 64.");
  tr::Translator additive_model = train_dates(data, "additive", kSteps);
  const tr::Evaluation additive_eval = tr::evaluate(additive_model, data.heldout());
  std::cout << "held out (" << additive_eval.count << " dates): exact match "
            << tut::num(100 * additive_eval.accuracy, "%.1f") << "%, BLEU "
            << tut::num(additive_eval.bleu, "%.3f") << ", weight on the right field "
            << tut::num(additive_eval.figure("alignment"), "%.2f") << " (year "
            << tut::num(additive_eval.figure("alignment_year"), "%.2f") << ", month "
            << tut::num(additive_eval.figure("alignment_month"), "%.2f") << ", day "
            << tut::num(additive_eval.figure("alignment_day"), "%.2f") << ")\n";

  t.step("Held-out dates, and what the model aligns",
         "Greedy decoding, one character at a time, each step's attention weights kept. "
         "The alignment of a date: one row per output character, one column per source "
         "character. The weight on the right field is, for each output digit of the year, "
         "month and day, the weight on the source characters that spell that field.");
  std::vector<std::string> shown_sources, shown_targets;
  for (size_t i = 0; i < 6; ++i) {
    shown_sources.push_back(data.heldout()[i].source);
    shown_targets.push_back(data.heldout()[i].target);
  }
  const std::vector<tr::Translation> additive_out = tr::translate(additive_model, shown_sources);
  int additive_right = 0;
  for (size_t i = 0; i < shown_sources.size(); ++i) {
    const bool right = additive_out[i].output == shown_targets[i];
    additive_right += right;
    std::cout << "  \"" << shown_sources[i] << "\"  ->  \"" << additive_out[i].output << "\""
              << (right ? "" : "   (expected \"" + shown_targets[i] + "\")") << "\n";
  }
  std::cout << "\nThe alignment of \"" << additive_out[0].input << "\":\n"
            << tr::alignment_table(additive_out[0]);
  t.alignment("additive_alignment", additive_out[0], "additive attention", "Source characters",
              "Output characters");
  t.say(
      "The year's digits look at the year, the month's at the month, the day's at the "
      "day. The weight often sits on the character just after a field (the \"/\" after "
      "\"12\"): the encoder's output there has read the whole field, so it serves as "
      "its key as well.");
  const double uniform = uniform_alignment(data.heldout());
  std::cout << "(attention spread evenly over the source would put " << tut::num(uniform, "%.2f")
            << " on the right field)\n";
  if (kTrainedChecks) {
    t.check("the model translates the 6 held-out dates shown", additive_right == 6,
            std::to_string(additive_right) + " of 6");
    t.check("over 70% of the 200 held-out dates are exact", additive_eval.accuracy > 0.7,
            tut::num(100 * additive_eval.accuracy, "%.1f") + "%");
    t.check(
        "its digits put over twice the uniform weight on the right field",
        additive_eval.figure("alignment") > 2 * uniform,
        tut::num(additive_eval.figure("alignment"), "%.2f") + " vs " + tut::num(uniform, "%.2f"));
  } else {
    std::cout << "(sanitizer build: " << kSteps
              << " steps, too few to learn; the checks of "
                 "the trained model run in the Release build)\n";
  }

  t.step("The same with dot-product attention",
         "Swap the additive score for d2l's scaled dot product q . k_j / sqrt(H) (Luong's "
         "dot score is the same product without the 1/sqrt(H)): no attention parameters at "
         "all. The encoder and decoder must now learn "
         "states whose dot products point at the right characters.");
  tr::Translator dot_model = train_dates(data, "dot", kSteps);
  const tr::Evaluation dot_eval = tr::evaluate(dot_model, data.heldout());
  std::cout << "held out: exact match " << tut::num(100 * dot_eval.accuracy, "%.1f")
            << "%, weight on the right field " << tut::num(dot_eval.figure("alignment"), "%.2f")
            << "\n";
  const std::vector<tr::Translation> dot_out = tr::translate(dot_model, shown_sources);
  int dot_right = 0;
  for (size_t i = 0; i < shown_sources.size(); ++i)
    dot_right += dot_out[i].output == shown_targets[i];
  std::cout << "of the 6 held-out dates shown above it gets " << dot_right << " right\n";
  std::cout << "\nThe alignment of \"" << dot_out[0].input << "\" -> \"" << dot_out[0].output
            << "\":\n"
            << tr::alignment_table(dot_out[0]);
  t.alignment("dot_alignment", dot_out[0], "dot-product attention", "Source characters",
              "Output characters");
  if (kTrainedChecks) {
    t.check(
        "dot-product attention learns the task too: over 20% exact, BLEU over 0.7",
        dot_eval.accuracy > 0.2 && dot_eval.bleu > 0.7,
        tut::num(100 * dot_eval.accuracy, "%.1f") + "%, BLEU " + tut::num(dot_eval.bleu, "%.3f"));
    t.check("its digits also put more than the uniform weight on the right field",
            dot_eval.figure("alignment") > 1.5 * uniform,
            tut::num(dot_eval.figure("alignment"), "%.2f") + " vs " + tut::num(uniform, "%.2f"));
    // A margin, not just an order: at these settings (attograd-translate --task dates
    // --steps 250 --heldout 200 --threads 1, seeds 1, 2, 3, 4, 13) additive's exact
    // match was 68.0-86.0% and dot's 21.0-52.0%, the paired gap 25.5-55.5 points.
    t.check("but after the same steps it trails additive attention by over 15 points",
            additive_eval.accuracy - dot_eval.accuracy > 0.15,
            tut::num(100 * (additive_eval.accuracy - dot_eval.accuracy), "%.1f") + " points");
  }
  t.say(
      "With no parameters in its score, dot-product attention must shape the encoder's "
      "and decoder's states themselves until their dot products point at the right "
      "characters; with the same steps it is behind. To see it with more steps: "
      "build/attograd-translate --task dates --attention dot --steps 1000.");
  t.say(
      "attograd-translate trains these models from the command line and draws any "
      "date's alignment: build/attograd-translate --task dates --save dates.npz, then "
      "--load dates.npz --predict \"3.5.1979\" --heatmap may.png.");
  return t.finish();
}
