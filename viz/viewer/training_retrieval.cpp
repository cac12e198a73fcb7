// The training scene's retrieval task (see training_tasks.h): two scoring
// functions of nn's table learn the same retrieval side by side.
//
// Legend: B examples, T keys per example, d key and query size, v value
// size, h hidden units (additive's, multihead's).
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <string>

#include "heatmap_widget.h"
#include "scene.h"
#include "training_tasks.h"

namespace ag::viewer {
namespace {

// ---- retrieval, two scoring functions of nn's table ---------------------------------
// B examples, each with T keys and values of which the first valid_len are
// real and the rest padding (masked with d2l's valid_lens). The query is a
// noisy copy of one valid key; the right output is that key's value. Two
// models learn it from the same data, each a scoring function of nn's table
// built for these sizes (nn::make_scoring_function):
//   scores  = a(q, k)                              the function's scores()
//   weights = masked_softmax(scores, valid_lens)
//   output  = weights @ values
// The task pools the values itself, as they are (a multihead's W_v and W_o
// go unused), so that the two models differ in their scores alone. Loss:
// mean squared error of the output against the right value, full batch, one
// Adam per model that has parameters; one without (dot) has nothing to
// train, and its loss stays where it starts.
constexpr int64_t kExamples = 16, kKeys = 8, kSize = 8, kValueSize = 4, kHiddens = 8;
const nn::ScoringSizes kSizes{
    .query_size = kSize, .key_size = kSize, .num_hiddens = kHiddens, .value_size = kValueSize};

// What function `name` learns here, from the parameters given a gradient:
// "additive: learns its 136 numbers (W_k, W_q, w_v)", "multihead: learns 128
// of its 200 numbers (W_q, W_k); W_v, W_o unused: the task pools the values
// as they are", or "dot: no parameters, nothing to train: its loss stays flat".
std::string learning_line(const std::string& name, const nn::ScoringFunction& function) {
  const auto parameters = function.named_parameters();
  if (parameters.empty()) return name + ": no parameters, nothing to train: its loss stays flat";
  std::string learned, unused;
  int64_t learned_numbers = 0;
  for (const auto& [parameter, p] : parameters) {
    std::string& list = p.grad().defined() ? learned : unused;
    list += (list.empty() ? "" : ", ") + parameter.substr(0, parameter.find('.'));
    if (p.grad().defined()) learned_numbers += p.numel();
  }
  const int64_t all = parameter_numbers(function);
  std::string line = name + ": learns " +
                     (learned_numbers == all
                          ? "its " + std::to_string(all)
                          : std::to_string(learned_numbers) + " of its " + std::to_string(all)) +
                     " numbers (" + learned + ")";
  if (!unused.empty()) line += "; " + unused + " unused: the task pools the values as they are";
  return line;
}

class RetrievalTask : public AdamTask {
 public:
  // Builds the functions once for their parameters' names and shapes (the
  // record's fields); start() builds them again from the session's seed.
  explicit RetrievalTask(const ScoringPair& pair)
      : pair_(pair), title_("Retrieval: " + pair[0] + " vs " + pair[1]) {
    build_functions(0);
  }
  const char* title() const override { return title_.c_str(); }

  // Per function NAME: its parameters ("NAME.W_q.weight") and their
  // gradients ("shown.grad.NAME.W_q.weight"), its loss and its three maps
  // ("shown.NAME.weights", ...).
  std::vector<RecordField> fields() const override {
    std::vector<RecordField> fields;
    for (size_t m = 0; m < 2; ++m) {
      for (const auto& [name, p] : functions_[m]->named_parameters()) {
        fields.push_back({pair_[m] + "." + name, p.shape()});
        fields.push_back({"shown.grad." + pair_[m] + "." + name, p.shape()});
      }
      const std::string prefix = "shown." + pair_[m];
      fields.push_back({prefix + ".loss", {1}});
      for (const char* map : {".weights", ".grad_weights", ".grad_scores"}) {
        fields.push_back({prefix + map, {kExamples, kKeys}});
      }
    }
    return fields;
  }
  std::vector<Series> series() const override {
    return {{"shown." + pair_[0] + ".loss", pair_[0], kScoringColors[0]},
            {"shown." + pair_[1] + ".loss", pair_[1], kScoringColors[1]}};
  }
  double default_learning_rate() const override { return 0.01; }
  const char* note() const override {
    return "Each of the 16 examples has 8 keys, some of them padding (hatched: past its "
           "valid_len, masked), and a query that is a noisy copy of one valid key (framed in "
           "red). The right output is that key's value, so the right weights put 1 on the "
           "framed key. Each model is a scoring function of nn's table (choose two above): its "
           "scores go through the masked softmax, and the weights average the values. Both see "
           "the same data, each with its own Adam, from the parameters its constructor draws. A "
           "function without parameters (the table's dot) cannot learn: its loss stays where it "
           "starts. Hence the default pair, additive and general_scaled: general_scaled, q^T W_a "
           "k / sqrt(d), is the dot product with a learned matrix between q and k.";
  }
  std::map<std::string, Tensor> data() const override {
    return {{"queries", queries_},       {"keys", keys_},     {"values", values_},
            {"valid_lens", valid_lens_}, {"answer", answer_}, {"target", target_}};
  }

  void draw(const TrainingSession& session, const std::map<std::string, Tensor>& record) override {
    const int64_t step = session.shown_step();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    // Per pair: two maps kGap apart (room for the first one's axis label), a
    // colour bar and its labels, the spacing between. The maps are as wide
    // as that allows (cells square, their tick labels ~30 px); the loss plot
    // takes the height they leave.
    const float bar = 70.0f, line = ImGui::GetTextLineHeightWithSpacing();
    const float map_width = std::floor((avail.x - 3 * (bar + kGap) - 6 * spacing) / 6);
    if (std::floor((map_width - 30) / kKeys) < kMinCell) {
      draw_by_model(session, record, avail);
      return;
    }
    const float cell = std::clamp(std::floor((map_width - 30) / kKeys), 6.0f, kMaxCell);
    const float maps_height = cell * kExamples + 7 * line;
    const float top_height = std::floor(std::max(avail.y * 0.3f, avail.y - maps_height));
    session.draw_curves(ImVec2(std::floor(avail.x * 0.5f), top_height));
    ImGui::SameLine();
    ImGui::BeginGroup();
    draw_summary(record, step);
    ImGui::EndGroup();

    ImGui::TextUnformatted(
        "Rows: the 16 examples (one query each); columns: their 8 keys. Each quantity for "
        "both models, side by side.");
    const ImVec2 map_size(map_width, avail.y - top_height - 3 * line);
    // One colour scale per quantity, shared by the two models, so that equal
    // colours mean equal numbers across the pair.
    const viz::ColorScale weight_scale{viz::Colormap::Viridis, 0.0, 1.0};
    draw_pair(record, "weights", "weights (framed: the right key)", weight_scale, map_size);
    const viz::ColorScale grad_weights_scale = gradient_scale(both(record, "grad_weights"));
    ImGui::SameLine();
    draw_pair(record, "grad_weights", "dL/dweights", grad_weights_scale, map_size);
    const viz::ColorScale grad_scores_scale = gradient_scale(both(record, "grad_scores"));
    ImGui::SameLine();
    draw_pair(record, "grad_scores", "dL/dscores", grad_scores_scale, map_size);
  }

 protected:
  void init() override {
    // Valid lengths 5..8; the query copies one of the valid keys. Keys have
    // one length, sqrt(d), so that no key wins a dot product by being long.
    valid_lens_ = (rand({kExamples}) * 4.0).to(kInt64) + 5;
    target_ = (rand({kExamples}) * valid_lens_.to(kFloat32)).to(kInt64);
    const Tensor directions = randn({kExamples, kKeys, kSize});
    keys_ = directions / sqrt(sum(directions * directions, -1, true)) * std::sqrt(double{kSize});
    values_ = randn({kExamples, kKeys, kValueSize});
    // pick [B, 1, T]: one-hot rows, so that a bmm picks the target key's row.
    const Tensor pick =
        unsqueeze(eq(unsqueeze(target_, 1), unsqueeze(arange(kKeys, kInt64), 0)).to(kFloat32), 1);
    queries_ = bmm(pick, keys_) + 0.3 * randn({kExamples, 1, kSize});
    answer_ = bmm(pick, values_);
    keep_ = nn::sequence_mask(valid_lens_, kKeys);
    // One more draw seeds both functions' parameters: a function starts from
    // the same parameters whatever its partner, so its curve is the same in
    // every pair, and two functions whose parameters have one shape start
    // from the same numbers (as in the compare scene).
    build_functions(static_cast<uint64_t>(rand({1}).item() * 0x1p31));
  }
  std::vector<std::vector<Tensor>> parameter_groups() const override {
    return {functions_[0]->parameters(), functions_[1]->parameters()};
  }

  std::map<std::string, Tensor> evaluate() override {
    const auto weights_of = [&](const Tensor& scores) {
      return nn::masked_softmax(scores, valid_lens_);
    };
    const auto loss_of = [&](const Tensor& weights) {
      return mse_loss(bmm(weights, values_), answer_);
    };
    std::map<std::string, Tensor> record;
    for (size_t m = 0; m < 2; ++m) {
      nn::ScoringFunction& function = *functions_[m];
      // Scores [B, 1, T]. Those of a function without parameters need no
      // gradient: a leaf that asks for one, so that dL/dscores still shows
      // what they would need.
      Tensor scores = function.scores(queries_, function.remember(keys_, values_));
      if (!scores.requires_grad()) scores = scores.detach().requires_grad_();
      const Staged staged = staged_backward(scores, weights_of, loss_of);
      const std::string prefix = "shown." + pair_[m];
      record[prefix + ".loss"] = reshape(staged.loss, {1});
      record[prefix + ".weights"] = reshape(staged.weights, {kExamples, kKeys});
      record[prefix + ".grad_weights"] = reshape(staged.grad_weights, {kExamples, kKeys});
      record[prefix + ".grad_scores"] = reshape(staged.grad_scores, {kExamples, kKeys});
      for (const auto& [name, p] : function.named_parameters()) {
        record[pair_[m] + "." + name] = p.detach().clone();
        // A parameter the scores do not use (multihead's W_v, W_o) gets no
        // gradient: 0 in the record.
        record["shown.grad." + pair_[m] + "." + name] =
            p.grad().defined() ? p.grad().clone() : zeros(p.shape(), p.dtype());
      }
      learning_[m] = learning_line(pair_[m], function);
    }
    return record;
  }

 private:
  // Example b's largest weight is on its target key, as a fraction of B.
  double right_key_fraction(const Tensor& weights) const {
    const std::vector<double> picked = argmax(weights, -1).to_vector();
    const std::vector<double> target = target_.to_vector();
    int right = 0;
    for (size_t b = 0; b < picked.size(); ++b) right += picked[b] == target[b] ? 1 : 0;
    return static_cast<double>(right) / static_cast<double>(picked.size());
  }

  void draw_summary(const std::map<std::string, Tensor>& record, int64_t step) const {
    ImGui::Text("Step %lld", static_cast<long long>(step));
    if (!ImGui::BeginTable("losses", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg)) return;
    ImGui::TableSetupColumn("model");
    ImGui::TableSetupColumn("loss");
    ImGui::TableSetupColumn("right key");
    ImGui::TableHeadersRow();
    for (size_t m = 0; m < 2; ++m) {
      const std::string prefix = "shown." + pair_[m];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[m]), "%s", pair_[m].c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.5f", record.at(prefix + ".loss").item());
      ImGui::TableNextColumn();
      ImGui::Text("%.0f%%", 100 * right_key_fraction(record.at(prefix + ".weights")));
    }
    ImGui::EndTable();
    show_note(
        "right key: how many of the 16 examples put their largest weight on the key their "
        "query copies (chance: about 1 in 6).");
    for (size_t m = 0; m < 2; ++m) {
      ImGui::PushStyleColor(ImGuiCol_Text, kScoringColors[m]);
      ImGui::TextWrapped("%s", learning_[m].c_str());
      ImGui::PopStyleColor();
    }
    ImGui::Spacing();
    ImGui::TextUnformatted("Try this");
    show_note(
        "- Compare the two loss curves and the right-key column: which function learns the "
        "match faster, and does it get every row right? (With the default pair and seed 0, "
        "general_scaled's loss falls faster than additive's; after 300 steps each still has a "
        "row or two on a wrong key.)\n"
        "- Padding: the hatched keys never get weight, and dL/dscores there is exactly 0: no "
        "gradient passes a masked score.\n"
        "- Set the learning rate to about 0.1 and press Reset: the scores grow faster. (With the "
        "default pair and seed 0, general_scaled gets all 16 rows right within 200 steps; "
        "additive keeps two wrong, and the gradient left on their rows of dL/dscores is nearly "
        "0: too little to pull them back.)\n"
        "- Drag the history slider back to look at any of the last 300 steps.");
  }

  static constexpr float kGap = 52.0f;      // pixels between the two maps of a pair
  static constexpr float kMaxCell = 32.0f;  // the largest cell side, in pixels
  // Below this cell side the six maps do not go in one row (windows narrower
  // than about 1500 pixels): draw_by_model lays them out in two.
  static constexpr float kMinCell = 10.0f;
  static constexpr float kMinPlotHeight = 140.0f;
  // The narrow layout's largest cell (about the wide one's at 1600x1000): a
  // taller window grows the loss plot instead.
  static constexpr float kMaxNarrowCell = 12.0f;

  // The narrow layout: one row per model, one column per quantity (weights,
  // dL/dweights, dL/dscores), each column's colour bar beside the second
  // model's map, under a loss plot at least kMinPlotHeight tall; the cells are as
  // large as that leaves room for, and the table and notes beside the plot
  // scroll in their own child.
  void draw_by_model(const TrainingSession& session, const std::map<std::string, Tensor>& record,
                     ImVec2 avail) const {
    const float text = ImGui::GetTextLineHeight(), gap_y = ImGui::GetStyle().ItemSpacing.y;
    const float bar = 70.0f, ticks = ImGui::CalcTextSize("15").x + 6.0f;
    // Per row: the model's name, the maps' titles, cells, tick labels and
    // axis label (as draw_heatmap lays them out).
    const float row_overhead = (text + gap_y) + (text + 4) + (2 * text + 6) + gap_y;
    const float column_width = std::floor((avail.x - ImGui::GetStyle().ItemSpacing.x) / 3);
    const float width_cell = std::floor((column_width - ticks - bar) / kKeys);
    const float height_cell =
        std::floor((avail.y - kMinPlotHeight - gap_y - 2 * row_overhead) / (2 * kExamples));
    const float cell = std::clamp(std::min(width_cell, height_cell), 3.0f, kMaxNarrowCell);
    const float row_height = cell * kExamples + row_overhead;
    const float top_height = std::floor(avail.y - gap_y - 2 * row_height);
    session.draw_curves(ImVec2(std::floor(avail.x * 0.5f), top_height));
    ImGui::SameLine();
    ImGui::BeginChild("summary", ImVec2(0, top_height));
    draw_summary(record, session.shown_step());
    show_note(
        "Maps: rows are the 16 examples, columns their 8 keys; framed: the key the query "
        "copies.");
    ImGui::EndChild();

    // One colour scale per quantity, shared by the two models.
    const char* const fields[] = {"weights", "grad_weights", "grad_scores"};
    const char* const titles[] = {"weights", "dL/dweights", "dL/dscores"};
    const viz::ColorScale scales[] = {{viz::Colormap::Viridis, 0.0, 1.0},
                                      gradient_scale(both(record, "grad_weights")),
                                      gradient_scale(both(record, "grad_scores"))};
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    for (size_t m = 0; m < 2; ++m) {
      const float row_y = origin.y + row_height * static_cast<float>(m);
      ImGui::SetCursorScreenPos(ImVec2(origin.x, row_y));
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[m]), "%s", pair_[m].c_str());
      const float maps_y = ImGui::GetCursorScreenPos().y;
      for (size_t q = 0; q < std::size(fields); ++q) {
        ImGui::SetCursorScreenPos(ImVec2(origin.x + column_width * static_cast<float>(q), maps_y));
        const bool weights = q == 0;
        draw_heatmap({"training/" + pair_[m] + "_" + fields[q], titles[q],
                      record.at("shown." + pair_[m] + "." + fields[q]), weights ? keep_ : Tensor(),
                      scales[q], "key", "example", "example", "key", cell},
                     ImVec2(column_width - bar, row_height));
        if (weights) frame_target_keys(drawn_heatmaps().back());
        // The bar of a column, once, beside its lower map.
        if (m == 1) {
          colorbar_beside_last_map((std::string(fields[q]) + " bar").c_str(), scales[q]);
        }
      }
    }
    ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + 2 * row_height));
    ImGui::Dummy(ImVec2(avail.x, 0));
  }

  // Both models' maps of one quantity ("weights", "grad_weights",
  // "grad_scores"), then their shared colour bar. The
  // weights hatch the padding and frame each example's target key; the
  // gradients show every number (dL/dscores is exactly 0 at the padding).
  void draw_pair(const std::map<std::string, Tensor>& record, const char* field, const char* title,
                 const viz::ColorScale& scale, ImVec2 size) const {
    const bool weights = std::string(field) == "weights";
    ImGui::BeginGroup();
    ImGui::TextUnformatted(title);
    ImGui::BeginGroup();
    for (const std::string& name : pair_) {
      draw_heatmap(
          {"training/" + name + "_" + field, name, record.at("shown." + name + "." + field),
           weights ? keep_ : Tensor(), scale, "key", "example", "example", "key", kMaxCell},
          size);
      if (weights) frame_target_keys(drawn_heatmaps().back());
      ImGui::SameLine(0, kGap);
    }
    ImGui::EndGroup();
    colorbar_beside_last_map((std::string(field) + " bar").c_str(), scale);
    ImGui::EndGroup();
  }

  // A red frame along the edges of each example's target cell (its centre
  // keeps the colour of its value; red shows on both ends of viridis).
  void frame_target_keys(const DrawnHeatmap& map) const {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const std::vector<double> target = target_.to_vector();
    for (size_t b = 0; b < target.size(); ++b) {
      const ImVec2 a(map.x + map.cell * static_cast<float>(target[b]),
                     map.y + map.cell * static_cast<float>(b));
      draw->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(a.x + map.cell - 1, a.y + map.cell - 1),
                    IM_COL32(255, 70, 70, 255), 0.0f, 0, map.cell >= 14 ? 2.0f : 1.0f);
    }
  }

  Tensor queries_, keys_, values_, answer_;  // [B, 1, d], [B, T, d], [B, T, v], [B, 1, v]
  Tensor valid_lens_, target_;               // int64 [B]
  Tensor keep_;                              // bool [B, T]: false at padding
  const ScoringPair pair_;
  const std::string title_;
  std::array<std::unique_ptr<nn::ScoringFunction>, 2> functions_;
  // What each function learns (learning_line), as the last evaluation found.
  std::array<std::string, 2> learning_;

  // The two functions, each drawing its parameters after manual_seed(seed).
  void build_functions(uint64_t seed) {
    for (size_t m = 0; m < 2; ++m) {
      manual_seed(seed);
      functions_[m] = nn::make_scoring_function(pair_[m], kSizes);
    }
  }

  // Both models' map `field` of `record`, for one colour scale.
  std::vector<Tensor> both(const std::map<std::string, Tensor>& record, const char* field) const {
    return {record.at("shown." + pair_[0] + "." + field),
            record.at("shown." + pair_[1] + "." + field)};
  }
};

}  // namespace

std::unique_ptr<TrainingTask> make_retrieval_task(const ScoringPair& pair) {
  return std::make_unique<RetrievalTask>(pair);
}

}  // namespace ag::viewer
