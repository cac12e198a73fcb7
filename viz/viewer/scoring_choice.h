// Choosing scoring functions from nn's table (nn/scoring.h), for the scenes
// that compare them, and the colours each compared function is drawn in.
#pragma once

#include <imgui.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "attograd/nn/scoring.h"
#include "scene.h"

namespace ag::viewer {

// The two scoring functions a scene compares, by their names in nn's table
// (nn/scoring.h): the compare, translate and pronounce scenes' controls
// choose them; a training record's fields are named after them.
using ScoringPair = std::array<std::string, 2>;
inline const ScoringPair kDefaultScoringPair = {"additive", "dot"};
// ag::Error naming `who` when a name is not in the table or both are one.
void check_scoring_pair(const ScoringPair& pair, const std::string& who);
// Two combos of the table's names, each with its one-line summary as a
// tooltip; true when the learner chose another pair (a valid one: the other
// model's name is not offered).
bool draw_scoring_pair_choice(ScoringPair& pair);
// The knob "scoring" (--set SCENE.scoring=general,multihead); `defaults`
// is the scene's pair before any is chosen (what --list-knobs says).
Knob scoring_pair_knob(std::function<void(const ScoringPair&)> set,
                       const ScoringPair& defaults = kDefaultScoringPair);

// How many numbers `function`'s parameters hold.
int64_t parameter_numbers(const nn::ScoringFunction& function);
// Compared function m (its colour), by the table: its name, the table's
// one-line summary, and what its parameters are: "additive: 3 parameter
// tensors (W_k, W_q, w_v), 40 numbers, as initialised (the seed draws the
// random ones), never trained" or "dot: no parameters, nothing to train".
// For the scenes that run the functions as built, untrained.
void draw_untrained_function(size_t m, const std::string& name,
                             const nn::ScoringFunction& function);

// The models' colours, in the plot and the maps' titles (tab10's first four:
// the first model, additive by default, blue; the second orange; ...).
inline const ImU32 kScoringColors[4] = {IM_COL32(31, 119, 180, 255), IM_COL32(255, 127, 14, 255),
                                        IM_COL32(44, 160, 44, 255), IM_COL32(214, 39, 40, 255)};
// Their held-out lines in the plot: the same hues, lighter (tab20's pairs), so
// a model's two lines read as one model's and are not taken for each other.
inline const ImU32 kScoringHeldOutColors[4] = {
    IM_COL32(174, 199, 232, 255), IM_COL32(255, 187, 120, 255), IM_COL32(152, 223, 138, 255),
    IM_COL32(255, 152, 150, 255)};

}  // namespace ag::viewer
