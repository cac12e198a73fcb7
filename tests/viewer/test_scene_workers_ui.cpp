// The translate, transformer and pronounce scenes as the desktop viewer runs them: a
// worker thread trains (Stepping::Background) while frames draw under Dear
// ImGui's null backend. Every control a learner has is used while the worker
// is mid-step: pause, play, step, reset, a new seed, a new task (which
// replaces the worker), typed text, saving the models (and loading them back
// on this thread while training goes on), and quitting. Written for
// ThreadSanitizer (label `threads`): the checks here are light, the point is
// that every one of these paths runs beside the worker; test_translate_ui and
// test_transformer_ui check what they show.
#include <gtest/gtest.h>
#include <imgui.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "attograd/translate/model.h"
#include "null_backend.h"
#include "scene_pronounce.h"
#include "scene_transformer.h"
#include "scene_translate.h"
#include "test_util.h"

namespace ag::viewer {
namespace {

namespace tr = ag::translate;

// Long enough for a few steps of both models under ThreadSanitizer on a
// loaded 2-core machine; a healthy run needs a small fraction of it.
constexpr auto kPatience = std::chrono::seconds(120);

class SceneWorkers : public NullBackend {
 protected:
  // Draws frames (the worker steps only while they come) until `done`;
  // false when kPatience ran out first.
  bool frames_until(Scene& scene, const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + kPatience;
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      frame([&] { scene.draw(); });
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
  // `steps` more training steps than now, with frames drawn meanwhile.
  bool train(Scene& scene, TrainingSession& session, int64_t steps) {
    const int64_t target = session.steps() + steps;
    return frames_until(scene, [&] { return session.steps() >= target; });
  }
  // The worker trains from the first frames; Pause stops it after the step
  // under way, Step takes one more, Play goes on.
  void start_pause_step_play(Scene& scene, TrainingSession& session) {
    ASSERT_TRUE(session.background());
    ASSERT_TRUE(train(scene, session, 2));
    set_knob(scene, "paused", "yes");
    session.sync();
    const int64_t paused_at = session.steps();
    frame([&] { scene.draw(); });
    session.single_step();
    session.sync();
    EXPECT_EQ(session.steps(), paused_at + 1);
    set_knob(scene, "paused", "no");
    ASSERT_TRUE(train(scene, session, 1));
  }
};

TEST_F(SceneWorkers, TranslateSceneEveryControlWhileTheWorkerTrains) {
  auto scene = std::make_unique<TranslateScene>(Stepping::Background);
  ASSERT_NO_FATAL_FAILURE(start_pause_step_play(*scene, scene->session()));

  // Typed text, a new learning rate and a new seed (a reset) mid-training.
  set_knob(*scene, "text", "May 3, 1979");
  set_knob(*scene, "lr", "0.005");
  set_knob(*scene, "seed", "3");
  ASSERT_TRUE(train(*scene, scene->session(), 1));
  scene->session().reset();
  ASSERT_TRUE(train(*scene, scene->session(), 1));

  // Save while training, and load what was saved on this thread while the
  // worker trains on.
  ag::testing::ScratchDir dir("scene_workers");
  scene->save(dir / "translate");
  for (const char* model : {"additive", "dot"})
    EXPECT_NO_THROW(tr::load_translator(dir / (std::string("translate-") + model + ".npz")));

  // A new task replaces the session and its worker; then quit mid-step.
  set_knob(*scene, "task", "reverse");
  ASSERT_TRUE(train(*scene, scene->session(), 1));
  frame([&] { scene->draw(); });
  scene.reset();
}

TEST_F(SceneWorkers, TransformerSceneEveryControlWhileTheWorkerTrains) {
  auto scene = std::make_unique<TransformerScene>(Stepping::Background);
  ASSERT_NO_FATAL_FAILURE(start_pause_step_play(*scene, scene->session()));

  // The parameters are read on the worker (inputs() calls into it) while it trains.
  EXPECT_GT(scene->inputs().size(), 0u);
  set_knob(*scene, "seed", "4");
  ASSERT_TRUE(train(*scene, scene->session(), 1));

  // A new task replaces the session and its worker (as the ablation's twin does).
  set_knob(*scene, "task", "sort");
  ASSERT_TRUE(train(*scene, scene->session(), 1));

  // Saving at the last frame, as --frames does, then quitting while training.
  ag::testing::ScratchDir dir("scene_workers");
  set_knob(*scene, "save_prefix", dir / "transformer");
  scene->before_last_frame();
  EXPECT_NO_THROW(tr::load_translator(dir / "transformer-masked.npz"));
  set_knob(*scene, "paused", "no");
  ASSERT_TRUE(train(*scene, scene->session(), 1));
  scene.reset();
}

TEST_F(SceneWorkers, PronounceSceneEveryControlWhileTheWorkerTrains) {
  auto scene = std::make_unique<PronounceScene>(Stepping::Background);
  set_knob(*scene, "mode", "train");
  ASSERT_NE(scene->session(), nullptr);
  ASSERT_NO_FATAL_FAILURE(start_pause_step_play(*scene, *scene->session()));

  // A typed word (posted to the worker's record), a new learning rate and a
  // new seed (a reset) mid-training.
  set_knob(*scene, "word", "knife");
  set_knob(*scene, "lr", "0.005");
  set_knob(*scene, "seed", "3");
  ASSERT_TRUE(train(*scene, *scene->session(), 1));
  scene->session()->reset();
  ASSERT_TRUE(train(*scene, *scene->session(), 1));

  // Asking pauses the worker after its step and the shipped model answers
  // on this thread; back to training, Play goes on; then quit mid-step.
  set_knob(*scene, "mode", "ask");
  scene->session()->sync();
  frame([&] { scene->draw(); });
  ASSERT_NE(scene->answer(), nullptr);
  EXPECT_EQ(scene->answer()->phonemes, "N AY F");
  set_knob(*scene, "mode", "train");
  set_knob(*scene, "paused", "no");
  ASSERT_TRUE(train(*scene, *scene->session(), 1));
  scene.reset();
}

}  // namespace
}  // namespace ag::viewer
