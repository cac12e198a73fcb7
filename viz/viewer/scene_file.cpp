// Scene "file": see scene_file.h.
//
// Shapes: weights [..., Tq, Tk] are shown as maps_ [N, Tq, Tk] (leading dims
// flattened, row-major); a state dict's module runs on queries [1, Tq, q],
// keys [1, Tk, k], values [1, Tk, v] and gives weights [1, (heads,) Tq, Tk].
#include "scene_file.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "heatmap_widget.h"

namespace ag::viewer {
namespace {

const std::set<std::string> kAdditiveKeys = {"W_k.weight", "W_q.weight", "w_v.weight"};
const std::set<std::string> kMultiHeadKeys = {"W_q.weight", "W_k.weight", "W_v.weight",
                                              "W_o.weight"};
const std::set<std::string> kMultiHeadBiasKeys = {"W_q.bias", "W_k.bias", "W_v.bias", "W_o.bias"};

// A name a module's parameter would have ("W_q.weight", "bias", Keras'
// "scale"): tells a state dict from an archive of weight arrays.
bool is_parameter_name(const std::string& name) {
  const std::string last = name.substr(name.rfind('.') + 1);
  return last == "weight" || last == "bias" || last == "scale" || last == "concat_score_weight";
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// The top-left corner of a [rows, cols] matrix, at most `limit` x `limit`.
Tensor top_left(const Tensor& matrix, int64_t limit) {
  return narrow(narrow(matrix, 0, 0, std::min(matrix.size(0), limit)), 1, 0,
                std::min(matrix.size(1), limit));
}

// "[1, 3]": where map `index` of the flattened maps sits in the leading dims.
std::string leading_index(int64_t index, const Shape& leading) {
  std::vector<std::string> parts(leading.size());
  for (size_t d = leading.size(); d-- > 0;) {
    parts[d] = std::to_string(index % leading[d]);
    index /= leading[d];
  }
  return "[" + join(parts) + "]";
}

}  // namespace

FileScene::FileScene() {
  refresh_file_list();
  // The example: what save_npz("mha.npz", mha.state_dict()) would hold.
  manual_seed(0);
  nn::MultiHeadAttention example(8, 8, 8, 16, 4);
  show_state_dict("Example (no file opened yet)", example.state_dict());
}

std::map<std::string, Tensor> FileScene::inputs() const {
  if (content_ == "weights") return {{"weights", weights_}};
  std::map<std::string, Tensor> out{{"queries", queries_}, {"keys", keys_}, {"values", values_}};
  if (additive_) {
    for (const auto& [name, p] : additive_->state_dict()) out["additive." + name] = p;
  } else if (mha_) {
    for (const auto& [name, p] : mha_->state_dict()) out["mha." + name] = p;
    out["num_heads"] = full({}, static_cast<double>(mha_->num_heads), kInt64);
  }
  return out;
}

// ---- opening ---------------------------------------------------------------------

void FileScene::open_file(const std::string& path) {
  std::snprintf(path_field_, sizeof path_field_, "%s", path.c_str());
  try {
    if (path.ends_with(".npz")) {
      open_archive(path, load_npz(path));
    } else {
      show_weights(path, load_npy(path));
      archive_.clear();
    }
  } catch (const Error& e) {
    // The loaders' messages name the file already; ours do not.
    const std::string reason = e.what();
    error_ = "Not shown: " + (reason.find(path) == std::string::npos ? path + ": " : "") + reason +
             (content_.empty() ? "" : "\n(Below: what was shown before.)");
  }
}

void FileScene::open_archive(const std::string& source,
                             const std::map<std::string, Tensor>& entries) {
  if (entries.empty()) throw Error("the archive holds no arrays");
  std::vector<std::string> parameters, others;
  for (const auto& [name, t] : entries)
    (is_parameter_name(name) ? parameters : others).push_back(name);
  if (!parameters.empty() && !others.empty()) {
    throw Error("it mixes parameters (" + join(parameters) + ") with other arrays (" +
                join(others) +
                "). Open either a state dict of one module or arrays of attention weights.");
  }
  if (!parameters.empty()) {
    show_state_dict(source, entries);
    archive_.clear();
    return;
  }
  // Arrays of weights: show the first; a combo picks the others.
  show_weights(source + " [" + entries.begin()->first + "]", entries.begin()->second);
  archive_ = entries;
  archive_entry_ = 0;
}

void FileScene::show_weights(const std::string& source, const Tensor& t) {
  if (!is_floating(t.dtype())) {
    throw Error("it holds " + describe(t) + "; attention weights are float32 or float64");
  }
  if (t.dim() < 2) {
    throw Error("it holds " + describe(t) + ", " + std::to_string(t.dim()) +
                "-D; attention weights have at least two dims, [..., Tq, Tk] (queries down, keys "
                "across)");
  }
  if (t.numel() == 0) throw Error("it holds " + describe(t) + ", which has no values");
  const int64_t num_queries = t.size(-2), num_keys = t.size(-1);
  const Tensor maps = reshape(t, {t.numel() / (num_queries * num_keys), num_queries, num_keys});

  // Non-finite values are shown (hatched) and counted: PyTorch writes NaN in
  // rows where every key is masked, and a learner should see where.
  const std::vector<double> values = maps.to_vector();
  std::vector<double> finite(values.size());
  int64_t bad = 0, first_bad = -1;
  double lo = 0.0, hi = 0.0;  // weights start at 0: the scale does too unless values are negative
  for (size_t k = 0; k < values.size(); ++k) {
    finite[k] = std::isfinite(values[k]);
    if (!finite[k]) {
      if (bad++ == 0) first_bad = static_cast<int64_t>(k);
      continue;
    }
    lo = std::min(lo, values[k]);
    hi = std::max(hi, values[k]);
  }
  if (bad == static_cast<int64_t>(values.size())) {
    throw Error("it holds " + describe(t) + " and none of its values is finite (NaN or inf)");
  }

  content_ = "weights";
  source_ = source;
  error_.clear();
  weights_ = t;
  maps_ = maps;
  finite_ = bad > 0 ? tensor(finite, maps.shape(), kBool) : Tensor();
  weight_scale_ = {viz::Colormap::Viridis, lo, hi > lo ? hi : lo + 1.0};
  first_map_ = 0;
  if (bad > 0) {
    error_ = source + ": " + std::to_string(bad) + " of " + std::to_string(values.size()) +
             " values are not finite (NaN or inf), the first in map " +
             std::to_string(first_bad / (num_queries * num_keys)) + " at query " +
             std::to_string(first_bad / num_keys % num_queries) + ", key " +
             std::to_string(first_bad % num_keys) +
             "; they are drawn hatched. (PyTorch gives NaN weights in rows where every key is "
             "masked.)";
  }
}

void FileScene::show_state_dict(const std::string& source,
                                const std::map<std::string, Tensor>& state) {
  std::set<std::string> names;
  for (const auto& [name, t] : state) names.insert(name);
  std::set<std::string> multihead_with_bias = kMultiHeadKeys;
  multihead_with_bias.insert(kMultiHeadBiasKeys.begin(), kMultiHeadBiasKeys.end());
  const bool additive = names == kAdditiveKeys;
  const bool multihead = names == kMultiHeadKeys || names == multihead_with_bias;
  if (!additive && !multihead) {
    throw Error("its names (" + join({names.begin(), names.end()}) +
                ") are not the state dict of a module the viewer knows. AdditiveAttention has "
                "W_k.weight, W_q.weight, w_v.weight; MultiHeadAttention has W_q.weight, "
                "W_k.weight, W_v.weight, W_o.weight (and the four .bias, or none); "
                "DotProductAttention has no parameters.");
  }
  for (const auto& [name, t] : state) {
    const int64_t rank = name.ends_with(".bias") ? 1 : 2;
    if (!is_floating(t.dtype()) || t.dim() != rank || t.numel() == 0) {
      throw Error(name + " is " + describe(t) + "; expected a non-empty float " +
                  (rank == 1 ? "[out] bias" : "[out, in] weight"));
    }
    for (double v : t.to_vector()) {
      if (!std::isfinite(v)) throw Error(name + " has values that are not finite (NaN or inf)");
    }
  }

  // Sizes from the shapes; load_state_dict checks that they agree.
  const Tensor& queries_weight = state.at("W_q.weight");
  const Tensor& keys_weight = state.at("W_k.weight");
  const int64_t hiddens = queries_weight.size(0);
  std::unique_ptr<nn::AdditiveAttention> new_additive;
  std::unique_ptr<nn::MultiHeadAttention> new_mha;
  int64_t value_size = 4;  // additive attention's values may have any width
  if (additive) {
    new_additive = std::make_unique<nn::AdditiveAttention>(keys_weight.size(1),
                                                           queries_weight.size(1), hiddens);
    new_additive->load_state_dict(state);
  } else {
    value_size = state.at("W_v.weight").size(1);
    new_mha = std::make_unique<nn::MultiHeadAttention>(keys_weight.size(1), queries_weight.size(1),
                                                       value_size, hiddens, 1, 0.0,
                                                       names.count("W_q.bias") > 0);
    new_mha->load_state_dict(state);
  }

  content_ = additive ? "AdditiveAttention" : "MultiHeadAttention";
  source_ = source;
  error_.clear();
  state_ = state;
  additive_ = std::move(new_additive);
  mha_ = std::move(new_mha);
  key_size_ = keys_weight.size(1);
  query_size_ = queries_weight.size(1);
  value_size_ = value_size;
  num_hiddens_ = hiddens;
  // A state dict does not store num_heads: offer the divisors of num_hiddens,
  // starting from the largest up to 4.
  head_choices_.clear();
  head_choice_ = 0;
  for (int64_t k = 1; k <= hiddens; ++k) {
    if (hiddens % k != 0) continue;
    if (k <= 4) head_choice_ = static_cast<int>(head_choices_.size());
    head_choices_.push_back(static_cast<int>(k));
  }
  rebuild_module();
}

void FileScene::rebuild_module() {
  NoGradGuard no_grad;
  manual_seed(static_cast<uint64_t>(seed_));
  queries_ = randn({1, num_queries_, query_size_});
  keys_ = randn({1, num_keys_, key_size_});
  values_ = randn({1, num_keys_, value_size_});
  if (additive_) {
    additive_->eval();
    (*additive_)(queries_, keys_, values_);
    module_weights_ = additive_->attention_weights();  // [1, Tq, Tk]
    return;
  }
  const bool bias = state_.count("W_q.bias") > 0;
  mha_ = std::make_unique<nn::MultiHeadAttention>(key_size_, query_size_, value_size_, num_hiddens_,
                                                  head_choices_[head_choice_], 0.0, bias);
  mha_->load_state_dict(state_);
  mha_->eval();
  (*mha_)(queries_, keys_, values_);
  module_weights_ = squeeze(mha_->attention_weights(), 0);  // [heads, Tq, Tk]
}

// ---- panel: open -------------------------------------------------------------------

void FileScene::refresh_file_list() {
  directory_files_.clear();
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(".", error)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(error) && (name.ends_with(".npy") || name.ends_with(".npz"))) {
      directory_files_.push_back(name);
    }
  }
  std::sort(directory_files_.begin(), directory_files_.end());
}

void FileScene::draw_open_panel() {
  ImGui::TextUnformatted("Open a .npy or .npz file");
  ImGui::PushItemWidth(-70);
  const bool entered = ImGui::InputText("##path", path_field_, sizeof path_field_,
                                        ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::PopItemWidth();
  ImGui::SameLine();
  if (ImGui::Button("Open") || entered) open_file(path_field_);
  show_note("or drop it on the window, or start the viewer with --open FILE.");
  ImGui::Separator();
  ImGui::TextUnformatted("In the current directory");
  ImGui::SameLine();
  if (ImGui::SmallButton("refresh")) refresh_file_list();
  ImGui::BeginChild("directory", ImVec2(0, 160), true);
  if (directory_files_.empty()) show_note("(no .npy or .npz files)");
  for (const std::string& name : directory_files_) {
    if (ImGui::Selectable(name.c_str(), source_.starts_with(name))) open_file(name);
  }
  ImGui::EndChild();
  ImGui::Separator();
  show_note(
      "What it shows:\n"
      "- attention weights, any [..., Tq, Tk] array, e.g. from PyTorch:\n"
      "  numpy.save('w.npy', attn.attention_weights.detach().numpy())\n"
      "- a state dict of AdditiveAttention or MultiHeadAttention (d2l's names), from attograd's "
      "save_npz(path, module.state_dict()) or from PyTorch:\n"
      "  numpy.savez('mha.npz', **{k: v.numpy() for k, v in mha.state_dict().items()})\n"
      "  and the module's weights on random inputs of the right sizes.");
}

// ---- the scene ------------------------------------------------------------------------

void FileScene::draw() {
  ImGui::BeginChild("controls", ImVec2(340, 0), true);
  draw_open_panel();
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("view", ImVec2(0, 0), false);
  if (!error_.empty()) show_error(error_);
  if (content_ == "weights") {
    draw_weights();
  } else if (!content_.empty()) {
    draw_state_dict();
  }
  ImGui::EndChild();
}

// ---- panel: attention weights -----------------------------------------------------------

void FileScene::draw_weights() {
  ImGui::Text("%s: %s", source_.c_str(), describe(weights_).c_str());
  if (archive_.size() > 1) {
    std::vector<const char*> names;
    for (const auto& [name, t] : archive_) names.push_back(name.c_str());
    int entry = archive_entry_;
    if (ImGui::Combo("array", &entry, names.data(), static_cast<int>(names.size()))) {
      const std::string file = source_.substr(0, source_.rfind(" ["));
      try {
        show_weights(file + " [" + names[entry] + "]", archive_.at(names[entry]));
        archive_entry_ = entry;
      } catch (const Error& e) {
        error_ = std::string("Cannot show ") + names[entry] + ": " + e.what();
      }
    }
  }
  const int64_t count = maps_.size(0), num_queries = maps_.size(1), num_keys = maps_.size(2);
  const Shape leading(weights_.shape().begin(), weights_.shape().end() - 2);
  if (count > kMaxMaps) {
    ImGui::SetNextItemWidth(300);
    ImGui::SliderInt("first map", &first_map_, 0, static_cast<int>(count - kMaxMaps));
    // On the slider's line where it fits, else on its own (at 1024x700 it ran
    // off the window: '...(leading dims [20], row-m').
    char shown[128];
    std::snprintf(shown, sizeof shown, "maps %d-%lld of %lld (leading dims %s)", first_map_,
                  static_cast<long long>(first_map_ + kMaxMaps - 1), static_cast<long long>(count),
                  shape_str(leading).c_str());
    ImGui::SameLine();
    if (ImGui::CalcTextSize(shown).x > ImGui::GetContentRegionAvail().x) ImGui::NewLine();
    ImGui::TextWrapped("%s", shown);
  }
  if (num_queries > kMaxCells || num_keys > kMaxCells) {
    ImGui::Text("Each map is %lld x %lld; shown: its first %lld queries and %lld keys.",
                static_cast<long long>(num_queries), static_cast<long long>(num_keys),
                static_cast<long long>(std::min(num_queries, kMaxCells)),
                static_cast<long long>(std::min(num_keys, kMaxCells)));
  }

  const int64_t shown = std::min(count, kMaxMaps);
  const int64_t columns = std::min<int64_t>(shown, 4);
  const int64_t rows = (shown + columns - 1) / columns;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float map_width = std::floor((avail.x - 90) / static_cast<float>(columns));
  const float map_height = std::floor(avail.y / static_cast<float>(rows)) - 8;
  for (int64_t k = 0; k < shown; ++k) {
    const int64_t index = first_map_ + k;
    const Tensor map = top_left(squeeze(narrow(maps_, 0, index, 1), 0), kMaxCells);
    const Tensor keep = finite_.defined()
                            ? top_left(squeeze(narrow(finite_, 0, index, 1), 0), kMaxCells)
                            : Tensor();
    const std::string title =
        "weights" + (leading.empty() ? std::string() : leading_index(index, leading));
    if (k % columns != 0) ImGui::SameLine();
    draw_heatmap({"file/map" + std::to_string(index), title, map, keep, weight_scale_, "Keys",
                  "Queries", "query", "key", 48, false},
                 ImVec2(map_width, map_height));
    if (k + 1 == columns) {
      ImGui::SameLine();
      draw_colorbar("weights bar", weight_scale_,
                    drawn_heatmaps().back().cell * static_cast<float>(map.size(0)));
    }
  }
}

// ---- panel: a state dict -------------------------------------------------------------------

void FileScene::draw_state_dict() {
  ImGui::Text("%s: the state dict of %s", source_.c_str(), content_.c_str());
  if (additive_) {
    ImGui::TextWrapped("AdditiveAttention(key_size=%lld, query_size=%lld, num_hiddens=%lld)",
                       static_cast<long long>(key_size_), static_cast<long long>(query_size_),
                       static_cast<long long>(num_hiddens_));
  } else {
    ImGui::TextWrapped(
        "MultiHeadAttention(key_size=%lld, query_size=%lld, value_size=%lld, num_hiddens=%lld, "
        "num_heads=%d, bias=%s)",
        static_cast<long long>(key_size_), static_cast<long long>(query_size_),
        static_cast<long long>(value_size_), static_cast<long long>(num_hiddens_),
        head_choices_[head_choice_], state_.count("W_q.bias") > 0 ? "true" : "false");
  }

  // The parameters: a table, then each one as a map on one shared scale.
  if (ImGui::BeginTable("parameters", 5,
                        ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    for (const char* column : {"name", "shape", "dtype (file)", "min", "max"}) {
      ImGui::TableSetupColumn(column);
    }
    ImGui::TableHeadersRow();
    for (const auto& [name, t] : state_) {
      const std::vector<double> values = t.to_vector();
      const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(shape_str(t.shape()).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(dtype_name(t.dtype()));
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", *lo);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", *hi);
    }
    ImGui::EndTable();
  }
  std::vector<Tensor> parameters;
  for (const auto& [name, t] : state_) parameters.push_back(t);
  const viz::ColorScale parameter_scale = fit_scale_over(parameters, viz::Colormap::Diverging);
  const float parameter_width =
      std::floor((ImGui::GetContentRegionAvail().x - 90) / static_cast<float>(state_.size()));
  for (const auto& [name, t] : state_) {
    if (name != state_.begin()->first) ImGui::SameLine();
    const Tensor matrix = top_left(t.dim() == 1 ? unsqueeze(t, 0) : t, kMaxCells);
    draw_heatmap({"file/param/" + name, name, matrix, Tensor(), parameter_scale, "in", "out", "out",
                  "in", 24, false},
                 ImVec2(parameter_width, 260));
  }
  ImGui::SameLine();
  draw_colorbar("parameters bar", parameter_scale, 180);

  // The module on seeded random inputs.
  ImGui::Separator();
  bool changed = false;
  ImGui::PushItemWidth(120);
  if (mha_) {
    std::vector<std::string> labels;
    for (int k : head_choices_) labels.push_back(std::to_string(k));
    std::vector<const char*> items;
    for (const std::string& label : labels) items.push_back(label.c_str());
    changed |=
        ImGui::Combo("num_heads", &head_choice_, items.data(), static_cast<int>(items.size()));
    same_line_if_fits("queries Tq", 120);
  }
  changed |= ImGui::SliderInt("queries Tq", &num_queries_, 1, 12);
  same_line_if_fits("keys Tk", 120);
  changed |= ImGui::SliderInt("keys Tk", &num_keys_, 1, 12);
  same_line_if_fits("seed", 120);
  changed |= ImGui::SliderInt("seed", &seed_, 0, 99);
  ImGui::PopItemWidth();
  if (changed) {
    try {
      rebuild_module();
    } catch (const Error& e) {
      error_ = e.what();
    }
  }
  if (mha_) show_note("A state dict does not store num_heads: choose it (it divides num_hiddens).");
  ImGui::TextWrapped(
      "Its attention weights on seeded random inputs: queries %s, keys %s, values %s",
      describe(queries_).c_str(), describe(keys_).c_str(), describe(values_).c_str());
  const int64_t maps = module_weights_.size(0);
  const double top = max(module_weights_).item();
  const viz::ColorScale scale{viz::Colormap::Viridis, 0.0, top > 0 ? top : 1.0};
  const int64_t columns = std::min<int64_t>(maps, 8);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float width = std::floor((avail.x - 90) / static_cast<float>(columns));
  const float height = std::floor(avail.y / static_cast<float>((maps + columns - 1) / columns)) - 8;
  for (int64_t i = 0; i < maps; ++i) {
    if (i % columns != 0) ImGui::SameLine();
    const Tensor map = squeeze(narrow(module_weights_, 0, i, 1), 0);
    draw_heatmap({mha_ ? "file/head" + std::to_string(i) : std::string("file/attention"),
                  mha_ ? "head " + std::to_string(i) : std::string("weights"), map, Tensor(), scale,
                  "Keys", "Queries", "query", "key", 40, false},
                 ImVec2(width, height));
    if (i + 1 == columns) {
      ImGui::SameLine();
      draw_colorbar("attention bar", scale,
                    drawn_heatmaps().back().cell * static_cast<float>(map.size(0)));
    }
  }
}

std::unique_ptr<Scene> make_file_scene() {
  return std::make_unique<FileScene>();
}

}  // namespace ag::viewer
