// The model switch: a model's name to its classes (translator.h).
#include "attograd/translate/translator.h"

#include <cmath>

#include "attograd/attograd.h"
#include "attograd/nn/seq2seq.h"
#include "attograd/nn/transformer.h"

namespace ag::translate {

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names{"bahdanau", "transformer"};
  return names;
}

std::unique_ptr<nn::EncoderDecoder> make_model(const ModelConfig& config, int64_t src_vocab_size,
                                               int64_t tgt_vocab_size) {
  AG_CHECK(
      config.embed_size > 0 && config.num_hiddens > 0 && config.num_layers > 0 &&
          config.dropout >= 0 && config.dropout < 1 && src_vocab_size > 0 && tgt_vocab_size > 0,
      "make_model",
      "bad sizes: embed " + std::to_string(config.embed_size) + ", hidden " +
          std::to_string(config.num_hiddens) + ", layers " + std::to_string(config.num_layers) +
          ", dropout " + std::to_string(config.dropout) + ", vocabularies " +
          std::to_string(src_vocab_size) + " and " + std::to_string(tgt_vocab_size));
  std::unique_ptr<nn::EncoderDecoder> model;
  if (config.model == "bahdanau") {
    AG_CHECK(config.encoder == "unidirectional" || config.encoder == "bidirectional", "make_model",
             "unknown encoder '" + config.encoder + "' (expected unidirectional or bidirectional)");
    // config.attention names a scoring function of nn's table.
    model = nn::make_bahdanau_seq2seq(
        src_vocab_size, tgt_vocab_size, config.embed_size, config.num_hiddens, config.num_layers,
        config.dropout, config.attention, config.encoder == "bidirectional", config.num_heads);
  } else if (config.model == "transformer") {
    // d2l's sizes: d even (sin/cos pairs of the positional encoding) and
    // split evenly over the heads.
    AG_CHECK(config.num_heads > 0 && config.ffn_num_hiddens > 0 && config.num_blks > 0 &&
                 config.num_hiddens % 2 == 0 && config.num_hiddens % config.num_heads == 0,
             "make_model",
             "bad Transformer sizes: hidden " + std::to_string(config.num_hiddens) + ", heads " +
                 std::to_string(config.num_heads) + ", FFN " +
                 std::to_string(config.ffn_num_hiddens) + ", blocks " +
                 std::to_string(config.num_blks) +
                 " (need positive sizes, an even hidden size and heads dividing it)");
    auto transformer = nn::make_transformer(src_vocab_size, tgt_vocab_size, config.num_hiddens,
                                            config.ffn_num_hiddens, config.num_heads,
                                            config.num_blks, config.dropout);
    transformer->transformer_decoder().causal = config.causal;
    // The embeddings are multiplied by sqrt(d) before the positional
    // encoding is added; the Transformer's authors (tensor2tensor, as fairseq)
    // draw them from N(0, 1/d) so that the product has unit scale. From
    // nn::Embedding's N(0, 1) (PyTorch's, d2l's) the product has entries of
    // ~sqrt(d): the positions drown and the first attention saturates (weights
    // of 1e-20 at step 30), and reverse learns several times slower.
    std::map<std::string, Tensor> embeddings;
    for (const char* name : {"encoder.embedding.weight", "decoder.embedding.weight"})
      embeddings[name] =
          transformer->state_dict().at(name) / std::sqrt(static_cast<double>(config.num_hiddens));
    transformer->load_state_dict(embeddings, /*strict=*/false);
    model = std::move(transformer);
  } else {
    std::string known;
    for (const auto& name : model_names()) known += (known.empty() ? "" : ", ") + name;
    throw Error("make_model: unknown model '" + config.model + "' (expected " + known + ")");
  }
  nn::init_seq2seq(*model);  // d2l's train_seq2seq: net.apply(xavier_init_weights)
  return model;
}

void check_model_config(const ModelConfig& config) {
  SkipDrawsGuard no_draws;
  make_model(config, 1, 1);
}

Translator make_translator(const ModelConfig& config, const Dataset& data) {
  Translator translator;
  translator.config = config;
  translator.task = data.task();
  translator.src_vocab = data.src_vocab();
  translator.tgt_vocab = data.tgt_vocab();
  translator.src_steps = data.src_steps();
  translator.tgt_steps = data.tgt_steps();
  translator.model = make_model(config, data.src_vocab().size(), data.tgt_vocab().size());
  return translator;
}

}  // namespace ag::translate
