// Saving and loading a translator as one .npz (model.h).
#include "attograd/translate/model.h"

#include <cmath>
#include <sstream>

#include "attograd/attograd.h"
#include "attograd/translate/tasks.h"

namespace ag::translate {

namespace {

constexpr const char* kMetaPrefix = "meta.";

Tensor text_tensor(const std::string& text) {
  std::vector<double> bytes;
  for (char c : text) bytes.push_back(static_cast<double>(static_cast<unsigned char>(c)));
  return tensor(bytes, {static_cast<int64_t>(bytes.size())}, kInt64);
}

Tensor vocab_tensor(const Vocab& vocab, const std::string& path) {
  std::string joined;
  for (const auto& token : vocab.idx_to_token()) {
    AG_CHECK(token.find('\n') == std::string::npos, "save_translator",
             path + ": a token holds a newline, which the file format uses as separator");
    joined += (joined.empty() ? "" : "\n") + token;
  }
  return text_tensor(joined);
}

// The entry `name` of a translator file, checked for dtype and rank.
const Tensor& meta_entry(const std::map<std::string, Tensor>& file, const std::string& name,
                         DType dtype, const std::string& path) {
  const auto it = file.find(name);
  AG_CHECK(it != file.end(), "load_translator",
           path + ": no '" + name + "' entry: not a model saved by attograd-translate");
  AG_CHECK(
      it->second.dtype() == dtype && it->second.dim() == 1, "load_translator",
      path + ": entry '" + name + "' has the wrong type or shape " + shape_str(it->second.shape()));
  return it->second;
}

std::string meta_text(const std::map<std::string, Tensor>& file, const std::string& name,
                      const std::string& path) {
  std::string text;
  for (double v : meta_entry(file, name, kInt64, path).to_vector()) {
    AG_CHECK(v >= 1 && v <= 255, "load_translator",
             path + ": entry '" + name + "' holds a value that is no byte: " + std::to_string(v));
    text += static_cast<char>(static_cast<unsigned char>(v));
  }
  return text;
}

Vocab meta_vocab(const std::map<std::string, Tensor>& file, const std::string& name,
                 const std::string& path) {
  std::vector<std::string> tokens;
  std::istringstream in(meta_text(file, name, path));
  for (std::string token; std::getline(in, token, '\n');) tokens.push_back(token);
  try {
    return Vocab::from_tokens(tokens);
  } catch (const Error& e) {
    throw Error("load_translator: " + path + ": entry '" + name + "': " + e.what());
  }
}

}  // namespace

void save_translator(const std::string& path, const Translator& translator) {
  AG_CHECK(translator.model != nullptr, "save_translator", "the translator has no model");
  AG_CHECK(translator.members.empty(), "save_translator",
           path + ": an ensemble of " + std::to_string(translator.members.size()) +
               " models is not one file; its members are saved as their own files");
  std::map<std::string, Tensor> file = translator.model->state_dict();
  const ModelConfig& c = translator.config;
  file["meta.format"] = tensor({static_cast<double>(kFormatVersion)}, {1}, kInt64);
  file["meta.model"] = text_tensor(c.model);
  file["meta.attention"] = text_tensor(c.attention);
  file["meta.task"] = text_tensor(translator.task.name);
  file["meta.sizes"] =
      tensor({static_cast<double>(c.embed_size), static_cast<double>(c.num_hiddens),
              static_cast<double>(c.num_layers), static_cast<double>(translator.src_steps),
              static_cast<double>(translator.tgt_steps)},
             {5}, kInt64);
  file["meta.dropout"] = tensor({c.dropout}, {1}, kFloat64);
  if (c.model == "transformer")
    file["meta.transformer"] =
        tensor({static_cast<double>(c.num_heads), static_cast<double>(c.ffn_num_hiddens),
                static_cast<double>(c.num_blks), c.causal ? 1.0 : 0.0},
               {4}, kInt64);
  file["meta.encoder"] = text_tensor(c.encoder);
  if (c.model == "bahdanau")
    file["meta.heads"] = tensor({static_cast<double>(c.num_heads)}, {1}, kInt64);
  file["meta.src_vocab"] = vocab_tensor(translator.src_vocab, path);
  file["meta.tgt_vocab"] = vocab_tensor(translator.tgt_vocab, path);
  save_npz(path, file);
}

Translator load_translator(const std::string& path) {
  const std::map<std::string, Tensor> file = load_npz(path);
  const double version = meta_entry(file, "meta.format", kInt64, path).to_vector().at(0);
  AG_CHECK(version >= 1 && version <= kFormatVersion, "load_translator",
           path + ": format version " + std::to_string(static_cast<int64_t>(version)) +
               ", this program reads 1 to " + std::to_string(kFormatVersion));
  Translator t;
  t.config.model = meta_text(file, "meta.model", path);
  t.config.attention = meta_text(file, "meta.attention", path);
  if (version >= 3) t.config.encoder = meta_text(file, "meta.encoder", path);
  if (version >= 4 && t.config.model == "bahdanau") {
    const double heads = meta_entry(file, "meta.heads", kInt64, path).to_vector().at(0);
    AG_CHECK(heads >= 1 && heads <= 1 << 12, "load_translator",
             path + ": implausible meta.heads " + std::to_string(heads));
    t.config.num_heads = static_cast<int64_t>(heads);
  } else if (t.config.model == "bahdanau") {
    t.config.num_heads = 1;  // files before format 4: additive or dot, no heads
  }
  try {
    t.task = find_task(meta_text(file, "meta.task", path)).format;
  } catch (const Error& e) {
    throw Error("load_translator: " + path + ": " + e.what());
  }
  const Tensor& sizes = meta_entry(file, "meta.sizes", kInt64, path);
  AG_CHECK(sizes.numel() == 5, "load_translator",
           path + ": meta.sizes has " + std::to_string(sizes.numel()) + " entries, expected 5");
  const std::vector<double> s = sizes.to_vector();
  t.config.embed_size = static_cast<int64_t>(s[0]);
  t.config.num_hiddens = static_cast<int64_t>(s[1]);
  t.config.num_layers = static_cast<int64_t>(s[2]);
  t.src_steps = static_cast<int64_t>(s[3]);
  t.tgt_steps = static_cast<int64_t>(s[4]);
  AG_CHECK(t.src_steps > 1 && t.tgt_steps > 1 && s[0] <= 1 << 16 && s[1] <= 1 << 16 && s[2] <= 64 &&
               t.src_steps <= 1 << 16 && t.tgt_steps <= 1 << 16,
           "load_translator", path + ": implausible sizes in meta.sizes");
  t.config.dropout = meta_entry(file, "meta.dropout", kFloat64, path).to_vector().at(0);
  if (t.config.model == "transformer") {
    const Tensor& sizes_tf = meta_entry(file, "meta.transformer", kInt64, path);
    AG_CHECK(sizes_tf.numel() == 4, "load_translator",
             path + ": meta.transformer has " + std::to_string(sizes_tf.numel()) +
                 " entries, expected 4");
    const std::vector<double> tf = sizes_tf.to_vector();
    AG_CHECK(tf[0] >= 1 && tf[0] <= 1 << 12 && tf[1] >= 1 && tf[1] <= 1 << 16 && tf[2] >= 1 &&
                 tf[2] <= 64 && (tf[3] == 0 || tf[3] == 1),
             "load_translator", path + ": implausible sizes in meta.transformer");
    t.config.num_heads = static_cast<int64_t>(tf[0]);
    t.config.ffn_num_hiddens = static_cast<int64_t>(tf[1]);
    t.config.num_blks = static_cast<int64_t>(tf[2]);
    t.config.causal = tf[3] == 1;
  }
  t.src_vocab = meta_vocab(file, "meta.src_vocab", path);
  t.tgt_vocab = meta_vocab(file, "meta.tgt_vocab", path);
  try {
    {
      // Every parameter is loaded below (strict): drawing initial values
      // first would be most of the load's time.
      SkipDrawsGuard no_draws;
      t.model = make_model(t.config, t.src_vocab.size(), t.tgt_vocab.size());
    }
    std::map<std::string, Tensor> state;
    for (const auto& [name, value] : file) {
      if (name.rfind(kMetaPrefix, 0) == 0) continue;
      // A NaN or an infinity would spread through every prediction (and
      // make beam search's ordering meaningless): refused here, by name.
      if (is_floating(value.dtype())) {
        const std::vector<double> values = value.to_vector();
        AG_CHECK(
            std::all_of(values.begin(), values.end(), [](double x) { return std::isfinite(x); }),
            "load_translator",
            "parameter '" + name + "' " + shape_str(value.shape()) +
                " holds NaN or infinity (a damaged file, or a training run that diverged)");
      }
      state[name] = value;
    }
    t.model->load_state_dict(state, /*strict=*/true);
  } catch (const Error& e) {
    throw Error("load_translator: " + path + ": " + e.what());
  }
  t.model->eval();
  return t;
}

}  // namespace ag::translate
