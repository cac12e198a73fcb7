// Scene "training" (see scene_training.h): two small tasks that train live.
//
// Each frame the shown task's session takes its steps (an Adam step on the
// gradients of the last evaluation, then a new evaluation, forward and a
// staged backward, so that dL/dweights and dL/dscores can be shown), whose
// maps go into the history; the maps on screen are always read from the
// history, live or scrubbed back.
#include "scene_training.h"

#include <imgui.h>

namespace ag::viewer {

TrainingScene::TrainingScene() {
  tasks_[static_cast<size_t>(Task::Retrieval)] = make_retrieval_task(retrieval_pair_);
  tasks_[static_cast<size_t>(Task::NadarayaWatson)] = make_nadaraya_watson_task();
  for (size_t i = 0; i < tasks_.size(); ++i) {
    sessions_[i] = std::make_unique<TrainingSession>(*tasks_[i]);
  }
}

void TrainingScene::set_task(Task task) {
  const bool paused = session().paused();
  task_ = task;
  session().show_step(session().steps());
  session().set_paused(paused);
}

void TrainingScene::set_steps_per_frame(int steps) {
  for (auto& session : sessions_) session->set_steps_per_frame(steps);
}

void TrainingScene::set_retrieval_pair(const ScoringPair& pair) {
  if (pair == retrieval_pair_) return;
  const size_t r = static_cast<size_t>(Task::Retrieval);
  const TrainingSession& old = *sessions_[r];
  const bool paused = old.paused();
  const int steps = old.steps_per_frame(), seed = old.seed();
  const double lr = old.learning_rate();
  // The session first: it reads its trainer until it goes.
  sessions_[r].reset();
  retrieval_pair_ = pair;
  tasks_[r] = make_retrieval_task(pair);
  sessions_[r] = std::make_unique<TrainingSession>(*tasks_[r]);
  TrainingSession& session = *sessions_[r];
  session.set_steps_per_frame(steps);
  if (lr != session.learning_rate()) session.set_learning_rate(lr);
  if (seed != session.seed()) session.set_seed(seed);  // step 0 again, from that seed
  session.set_paused(paused);
}

std::map<std::string, Tensor> TrainingScene::inputs() const {
  std::map<std::string, Tensor> out = current_task().data();
  for (auto& [name, t] : session().shown_record()) out[name] = t;
  out["shown.step"] = tensor({static_cast<double>(session().shown_step())}, {1}, kInt64);
  return out;
}

std::vector<Knob> TrainingScene::knobs() {
  return {
      choice_knob("task", "the task shown (each trains on its own)",
                  {"retrieval", "nadaraya-watson"},
                  [this](int task) { set_task(static_cast<Task>(task)); }),
      scoring_pair_knob([this](const ScoringPair& pair) { set_retrieval_pair(pair); },
                        kRetrievalDefaultPair),
      choice_knob("paused", "yes: the shown task waits at its step 0 until Play (or Step)",
                  {"no", "yes"}, [this](int paused) { session().set_paused(paused == 1); }),
      number_knob("steps_per_frame", "training steps each frame, for every task", 1, 20, true,
                  [this](double steps) { set_steps_per_frame(static_cast<int>(steps)); }),
      number_knob("lr", "the shown task's learning rate (Adam's)", 1e-3, 1.0, false,
                  [this](double lr) { session().set_learning_rate(lr); }),
      number_knob("seed", "the shown task's seed: its data and initial parameters", 0, 99, true,
                  [this](double seed) { session().set_seed(static_cast<int>(seed)); }),
  };
}

void TrainingScene::print_stats(std::ostream& out) const {
  session().print_stats(out);
}

void TrainingScene::draw() {
  session().frame();
  draw_panes(
      300, [&] { draw_controls(); }, session().error(),
      [&] { current_task().draw(session(), session().shown_record()); });
}

// ---- panel: the knobs --------------------------------------------------------------------
void TrainingScene::draw_controls() {
  ImGui::TextUnformatted("Task");
  int task = static_cast<int>(task_);
  bool changed = ImGui::RadioButton("retrieval: two scoring functions", &task,
                                    static_cast<int>(Task::Retrieval));
  changed |= ImGui::RadioButton("Nadaraya-Watson regression", &task,
                                static_cast<int>(Task::NadarayaWatson));
  if (changed) set_task(static_cast<Task>(task));
  if (task_ == Task::Retrieval) {
    ImGui::Separator();
    ImGui::TextUnformatted("Scoring functions (nn's table)");
    ScoringPair pair = retrieval_pair_;
    if (draw_scoring_pair_choice(pair)) set_retrieval_pair(pair);
  }
  ImGui::Separator();
  session().draw_controls();
  ImGui::Separator();

  show_note(current_task().note());
  ImGui::Spacing();
  show_note(
      "Gradient maps: red where the loss grows with the number (the step lowers it), blue "
      "where it falls (the step raises it), white where it does not matter.");
  if (ImGui::CollapsingHeader("Where the gradients come from")) {
    show_note(
        "From the real backward, cut in three: loss -> weights, weights -> scores, scores -> "
        "parameters. Each cut end is a leaf (detach, then requires_grad_), so the library fills "
        "its grad(): dL/dweights, then dL/dscores; the last backward hands the parameters "
        "exactly what one uncut backward would, and Adam steps with it.");
  }
}

std::unique_ptr<Scene> make_training_scene() {
  return std::make_unique<TrainingScene>();
}

}  // namespace ag::viewer
