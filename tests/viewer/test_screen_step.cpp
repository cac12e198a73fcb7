// The step scene, as drawn: every forward stage and every gradient card has
// the colours of the numbers the library computes from the dumped inputs,
// the forward written here with the d2l building blocks (masked_softmax)
// and each gradient taken by autograd from a leaf copy of its stage.
#include <gtest/gtest.h>

#include <cmath>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

// The call of viz/viewer/attention_call.h, rebuilt from the viewer's inputs.
struct Call {
  Tensor q, k, v, g, valid_lens, keep;
  double p = 0;
  bool training = false;
  uint64_t seed = 0;

  explicit Call(const std::map<std::string, Tensor>& in)
      : q(in.at("queries")),
        k(in.at("keys")),
        v(in.at("values")),
        g(in.at("upstream")),
        valid_lens(in.at("valid_lens")),
        p(in.at("dropout_p").item()),
        training(in.at("training").item() != 0),
        seed(static_cast<uint64_t>(in.at("dropout_seed").item())) {
    keep = nn::lengths_to_keep(valid_lens, {1, q.size(1), k.size(1)});
  }

  // Stage s (0 scores .. 5 output) from stage s - 1 (`x`).
  Tensor stage(int s, const Tensor& x, const Tensor& values) const {
    switch (s) {
      case 0:
        return matmul(q, transpose(k, -2, -1));
      case 1:
        return x / std::sqrt(static_cast<double>(q.size(-1)));
      case 2:
        return masked_fill(x, logical_not(keep), nn::kD2lMaskValue);
      case 3:
        return softmax(x, -1);
      case 4:
        manual_seed(seed);
        return dropout(x, p, training);
      default:
        return matmul(x, values);
    }
  }
  std::vector<Tensor> forward() const {
    std::vector<Tensor> stages;
    Tensor x;
    for (int s = 0; s < 6; ++s) stages.push_back(x = stage(s, x, v));
    return stages;
  }
  // dL/dstage s, L = sum(output * G), by autograd from a leaf copy of the stage.
  Tensor stage_grad(int s, const Tensor& value) const {
    Tensor x = value.detach().requires_grad_();
    Tensor y = x;
    for (int t = s + 1; t < 6; ++t) y = stage(t, y, v);
    sum(y * g).backward();
    return x.grad();
  }
};

void check_scene(const SceneRun& run) {
  const Call c(run.inputs);
  const std::vector<Tensor> stages = c.forward();
  // The forward here agrees with d2l's masked_softmax.
  EXPECT_LT(max(abs(stages[3] - nn::masked_softmax(stages[1], c.valid_lens))).item(), 1e-12);
  const Tensor keep = slice_of(c.keep, 0);
  const char* const names[] = {"scores", "scaled", "masked", "weights", "dropped", "output"};
  for (int s = 0; s < 6; ++s) {
    SCOPED_TRACE(names[s]);
    const bool hatched = s >= 2 && s <= 4;
    std::string id = "step/", grad_id = "step/d";
    id += names[s];
    grad_id += names[s];
    EXPECT_TRUE(cells_match(run, id, slice_of(stages[s], 0), hatched ? keep : Tensor()));
    EXPECT_TRUE(cells_match(run, grad_id, slice_of(c.stage_grad(s, stages[s]), 0)));
  }
  // The leaves' gradients, by one backward through the whole call.
  const Tensor q = c.q.detach().requires_grad_(), k = c.k.detach().requires_grad_(),
               v = c.v.detach().requires_grad_();
  Call leaves = c;
  leaves.q = q;
  leaves.k = k;
  Tensor x;
  for (int s = 0; s < 6; ++s) x = leaves.stage(s, x, v);
  sum(x * c.g).backward();
  EXPECT_TRUE(cells_match(run, "step/dQ", slice_of(q.grad(), 0)));
  EXPECT_TRUE(cells_match(run, "step/dK", slice_of(k.grad(), 0)));
  EXPECT_TRUE(cells_match(run, "step/dV", slice_of(v.grad(), 0)));
}

TEST(StepScreen, EveryStageAndGradientCellByCell) {
  SceneRun run = run_scene("step");
  ASSERT_EQ(run.exit_code, 0);
  check_scene(run);
  // The default shows both masking (a hatched key) and dropout at work.
  const Call c(run.inputs);
  EXPECT_LT(c.valid_lens.item(), 5);
  EXPECT_TRUE(c.training);
  EXPECT_GT(c.p, 0);
  const std::vector<Tensor> stages = c.forward();
  const Tensor dropped_here = logical_and(c.keep, eq(stages[4], zeros({}, kFloat64)));
  EXPECT_GT(sum(dropped_here.to(kInt64)).item(), 0) << "no kept weight was dropped";
}

TEST(StepScreen, SaneAt1280x800) {
  SceneRun run = run_scene("step", 4, {"--size", "1280x800"});
  ASSERT_EQ(run.exit_code, 0);
  // The forward and the stages' gradients fit on the screen; the leaves'
  // row may need scrolling.
  for (const char* id : {"step/output", "step/dscores"}) {
    const LayoutEntry& map = find_map(run, id);
    EXPECT_LE(map.x + map.cell * static_cast<double>(map.cols), 1280) << id;
    EXPECT_LE(map.y + map.cell * static_cast<double>(map.rows), 800) << id;
  }
  const Call c(run.inputs);
  EXPECT_TRUE(cells_match(run, "step/weights", slice_of(c.forward()[3], 0), slice_of(c.keep, 0)));
}

}  // namespace
}  // namespace ag::viewer_test
