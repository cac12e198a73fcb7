// The graph scene, as drawn: its default step is the output's BmmBackward
// (output = bmm(dropped, V)); the gradient it receives and the two it sends
// have, cell by cell, the colours of what the library computes from the
// dumped inputs: dL/doutput = G, and by autograd dL/ddropped and dL/dV.
#include <gtest/gtest.h>

#include <cmath>

#include "screen_check.h"

namespace ag::viewer_test {
namespace {

TEST(GraphScreen, DefaultStepIsTheOutputsBmmCellByCell) {
  SceneRun run = run_scene("graph");
  ASSERT_EQ(run.exit_code, 0);
  const auto& in = run.inputs;
  const Tensor& q = in.at("queries");
  const Tensor& k = in.at("keys");
  const Tensor& g = in.at("upstream");
  const Tensor v = in.at("values").detach().requires_grad_();
  // The forward up to dropout, with d2l's masked softmax.
  const Tensor scores = matmul(q, transpose(k, -2, -1)) / std::sqrt(double(q.size(-1)));
  const Tensor weights = nn::masked_softmax(scores, in.at("valid_lens"));
  manual_seed(static_cast<uint64_t>(in.at("dropout_seed").item()));
  const Tensor dropped = dropout(weights, in.at("dropout_p").item(), in.at("training").item() != 0)
                             .detach()
                             .requires_grad_();
  sum(matmul(dropped, v) * g).backward();

  EXPECT_TRUE(cells_match(run, "graph/grad_out", slice_of(g, 0)));
  EXPECT_TRUE(cells_match(run, "graph/grad_in0", slice_of(dropped.grad(), 0)));
  EXPECT_TRUE(cells_match(run, "graph/grad_in1", slice_of(v.grad(), 0)));
  // Gradients are signed: diverging maps centred on 0.
  const LayoutEntry& map = find_map(run, "graph/grad_in0");
  EXPECT_EQ(map.scale.map, viz::Colormap::Diverging);
  EXPECT_NEAR(map.scale.lo, -map.scale.hi, 1e-12);
}

TEST(GraphScreen, SaneAt1280x800) {
  SceneRun run = run_scene("graph", 4, {"--size", "1280x800"});
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_TRUE(cells_match(run, "graph/grad_out", slice_of(run.inputs.at("upstream"), 0)));
  const LayoutEntry& map = find_map(run, "graph/grad_in1");
  EXPECT_LE(map.x + map.cell * static_cast<double>(map.cols), 1280);
  EXPECT_LE(map.y + map.cell * static_cast<double>(map.rows), 800);
}

}  // namespace
}  // namespace ag::viewer_test
