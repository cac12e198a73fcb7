// Choosing scoring functions from nn's table (scoring_choice.h).
#include "scoring_choice.h"

namespace ag::viewer {

void check_scoring_pair(const ScoringPair& pair, const std::string& who) {
  for (const std::string& name : pair) {
    AG_CHECK(nn::find_scoring_function(name) != nullptr, who,
             "no scoring function '" + name + "': the table has " + nn::scoring_function_names());
  }
  AG_CHECK(pair[0] != pair[1], who,
           "the two models' scoring functions are both '" + pair[0] + "': choose two of " +
               nn::scoring_function_names());
}

bool draw_scoring_pair_choice(ScoringPair& pair) {
  bool changed = false;
  for (size_t m = 0; m < 2; ++m) {
    ImGui::PushID(static_cast<int>(m));
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[m]), "%s",
                       m == 0 ? "first" : "second");
    ImGui::SameLine(60);
    ImGui::SetNextItemWidth(-1);
    if (ImGui::BeginCombo("##scoring", pair[m].c_str())) {
      for (const nn::ScoringEntry& entry : nn::scoring_functions()) {
        // The other model's function is not offered: the two must differ.
        if (entry.name == pair[1 - m]) continue;
        if (ImGui::Selectable(entry.name.c_str(), entry.name == pair[m]) && entry.name != pair[m]) {
          pair[m] = entry.name;
          changed = true;
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", entry.summary.c_str());
      }
      ImGui::EndCombo();
    }
    ImGui::PopID();
  }
  return changed;
}

Knob scoring_pair_knob(std::function<void(const ScoringPair&)> set, const ScoringPair& defaults) {
  return Knob{"scoring",
              "the two scoring functions compared, from nn's table (in a training scene: new "
              "models, training starts over)",
              "two of " + nn::scoring_function_names() + ", comma-separated (default " +
                  defaults[0] + "," + defaults[1] + ")",
              [set = std::move(set)](const std::string& value) {
                const std::vector<std::string> names = split_list(value);
                AG_CHECK(
                    names.size() == 2, "attograd-viewer",
                    "scoring takes two scoring functions, e.g. additive,dot; got '" + value + "'");
                const ScoringPair pair = {names[0], names[1]};
                check_scoring_pair(pair, "attograd-viewer");
                set(pair);
              }};
}

int64_t parameter_numbers(const nn::ScoringFunction& function) {
  int64_t count = 0;
  for (const Tensor& p : function.parameters()) count += p.numel();
  return count;
}

void draw_untrained_function(size_t m, const std::string& name,
                             const nn::ScoringFunction& function) {
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kScoringColors[m]), "%s", name.c_str());
  if (const nn::ScoringEntry* entry = nn::find_scoring_function(name)) {
    show_note(entry->summary.c_str());
  }
  const auto parameters = function.named_parameters();
  if (parameters.empty()) {
    show_note((name + ": no parameters, nothing to train").c_str());
    return;
  }
  std::string names;
  for (const auto& entry : parameters) {
    names += (names.empty() ? "" : ", ") + entry.first.substr(0, entry.first.find('.'));
  }
  const char* tensors = parameters.size() == 1 ? " parameter tensor (" : " parameter tensors (";
  show_note((name + ": " + std::to_string(parameters.size()) + tensors + names + "), " +
             std::to_string(parameter_numbers(function)) +
             " numbers, as initialised (the seed draws the random ones), never trained")
                .c_str());
}

}  // namespace ag::viewer
