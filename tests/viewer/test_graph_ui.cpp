// The graph scene without a window (ImGui's null backend): its node list is
// the engine's sweep as the observer reported it, the gradients it shows are
// what backward stores, Next (the right arrow key) walks that order, a click
// jumps to a node, and hovering a box reports its shape, dtype and gradient norm.
#include <gtest/gtest.h>
#include <imgui.h>
#include <imgui_internal.h>

#include <map>
#include <sstream>

#include "null_backend.h"
#include "scene_graph.h"
#include "test_util.h"

namespace ag::viewer {
namespace {

class GraphUi : public NullBackend {
 protected:
  GraphScene scene;

  void draw() {
    frame([&] { scene.draw(); });
  }
  // One press of an arrow key (down for a frame, then up), as GLFW reports it.
  void press(ImGuiKey_ key) {
    ImGuiIO& io = ImGui::GetIO();
    io.KeyMap[key] = 256 + key;  // any free index; the GLFW backend maps its own
    io.KeysDown[256 + key] = true;
    draw();
    io.KeysDown[256 + key] = false;
    draw();
  }
  const GraphScene::Box& box_of(const std::string& label) {
    for (const auto& box : scene.boxes())
      if (box.label == label) return box;
    throw Error("no box " + label);
  }
  void hover(const GraphScene::Box& box) {
    ImGui::GetIO().MousePos = ImVec2((box.min.x + box.max.x) / 2, (box.min.y + box.max.y) / 2);
    draw();
  }
  std::vector<std::string> grad_maps() const {
    std::vector<std::string> ids;
    for (const DrawnHeatmap& map : drawn_heatmaps()) ids.push_back(map.id);
    return ids;
  }
};

TEST_F(GraphUi, NodeListIsTheEnginesOrder) {
  draw();
  std::vector<std::string> names;
  for (const ObservedStep& step : scene.steps()) names.push_back(step.node->name());
  // The engine's order for this graph: from L up, each node after all the
  // nodes that use its output (tests/test_backward_observer.cpp checks that the
  // observer reports the order the engine runs the lambdas in).
  EXPECT_EQ(names, (std::vector<std::string>{"SumBackward", "MulBackward", "BmmBackward",
                                             "DropoutBackward", "SoftmaxBackward", "WhereBackward",
                                             "DivBackward", "BmmBackward", "TransposeBackward"}));

  // Every op box is one step of the sweep, and the sweep is topological
  // over the drawn edges: a node runs before the nodes of its inputs.
  size_t op_boxes = 0;
  std::map<const Node*, int> step_of;
  for (const auto& box : scene.boxes()) {
    if (!box.node) continue;
    ++op_boxes;
    ASSERT_GE(box.step, 0);
    EXPECT_EQ(scene.steps()[static_cast<size_t>(box.step)].node, box.node) << box.label;
    step_of[box.node] = box.step;
  }
  EXPECT_EQ(op_boxes, scene.steps().size());
  for (const auto& [node, step] : step_of) {
    for (const NodeInput& input : node->inputs()) {
      if (input.defined() && input.grad_fn()) {
        EXPECT_GT(step_of.at(input.grad_fn().get()), step);
      }
    }
  }

  // What the steps sent to the leaves adds up to what backward stored in them.
  std::map<const TensorImpl*, Tensor> sent;
  for (const ObservedStep& step : scene.steps())
    for (size_t i = 0; i < step.grad_inputs.size(); ++i) {
      const NodeInput& input = step.node->inputs()[i];
      if (!input.is_leaf() || !step.grad_inputs[i].defined()) continue;
      Tensor& total = sent[input.tensor().impl()];
      total = total.defined() ? total + step.grad_inputs[i] : step.grad_inputs[i];
    }
  for (const char* leaf : {"Q", "K", "V"}) {
    const Tensor& t = box_of(leaf).tensor;
    ASSERT_TRUE(sent.count(t.impl())) << leaf;
    EXPECT_EQ(testing::max_abs_diff(sent.at(t.impl()), t.grad()), 0.0) << leaf;
  }
}

TEST_F(GraphUi, NextWalksTheSweepInOrder) {
  draw();
  const int first = scene.default_step();
  ASSERT_EQ(scene.current_step(), first);
  // The default: output = bmm(dropped, V).
  const Node& output = *scene.steps()[static_cast<size_t>(first)].node;
  EXPECT_EQ(output.name(), "BmmBackward");
  EXPECT_EQ(output.inputs()[0].name(), "dropped");
  EXPECT_EQ(output.inputs()[1].name(), "V");
  // The output's bmm sends to both its inputs: two maps besides the one it receives.
  EXPECT_EQ(grad_maps(),
            (std::vector<std::string>{"graph/grad_out", "graph/grad_in0", "graph/grad_in1"}));

  const int last = static_cast<int>(scene.steps().size()) - 1;
  for (int expected = first + 1; expected <= last; ++expected) {
    press(ImGuiKey_RightArrow);
    ASSERT_EQ(scene.current_step(), expected);
    // One map per input that gets a gradient.
    const ObservedStep& step = scene.steps()[static_cast<size_t>(expected)];
    size_t sent = 0;
    for (const Tensor& g : step.grad_inputs) sent += g.defined();
    EXPECT_EQ(grad_maps().size(), 1 + sent) << step.node->name();
  }
  press(ImGuiKey_RightArrow);  // past the end: stays on the last node
  EXPECT_EQ(scene.current_step(), last);
  EXPECT_EQ(scene.steps()[static_cast<size_t>(last)].node->name(), "TransposeBackward");
  for (int expected = last - 1; expected >= 0; --expected) {
    press(ImGuiKey_LeftArrow);
    ASSERT_EQ(scene.current_step(), expected);
  }
  press(ImGuiKey_LeftArrow);
  EXPECT_EQ(scene.current_step(), 0);

  // A click on a node jumps to its step.
  const GraphScene::Box& softmax = box_of("SoftmaxBackward");
  hover(softmax);
  ImGui::GetIO().MouseDown[0] = true;
  draw();
  ImGui::GetIO().MouseDown[0] = false;
  draw();
  EXPECT_EQ(scene.current_step(), softmax.step);
}

TEST_F(GraphUi, HoverShowsShapeDtypeAndGradientNorm) {
  draw();
  EXPECT_EQ(scene.hover_text(), "");
  const GraphScene::Box& softmax = box_of("SoftmaxBackward");
  hover(softmax);
  const Tensor& g = scene.steps()[static_cast<size_t>(softmax.step)].grad_output;
  std::ostringstream norm_text;
  norm_text.precision(4);
  norm_text << "|dL/dweights| = " << norm(g);
  const std::string text = scene.hover_text();
  EXPECT_NE(text.find("SoftmaxBackward"), std::string::npos) << text;
  EXPECT_NE(text.find("output weights [1, 3, 5] float64"), std::string::npos) << text;
  EXPECT_NE(text.find(norm_text.str()), std::string::npos) << text;
  const ImGuiWindow* tooltip = ImGui::FindWindowByName("##Tooltip_00");
  ASSERT_NE(tooltip, nullptr);
  EXPECT_TRUE(tooltip->Active);

  const GraphScene::Box& q = box_of("Q");
  hover(q);
  std::ostringstream q_norm;
  q_norm.precision(4);
  q_norm << "|grad()| = " << norm(q.tensor.grad());
  EXPECT_NE(scene.hover_text().find("leaf [1, 3, 4] float64"), std::string::npos);
  EXPECT_NE(scene.hover_text().find(q_norm.str()), std::string::npos) << scene.hover_text();

  hover(box_of("G"));
  EXPECT_NE(scene.hover_text().find("constant [1, 3, 3] float64"), std::string::npos);
  EXPECT_NE(scene.hover_text().find("no gradient"), std::string::npos);
}

}  // namespace
}  // namespace ag::viewer
