// Scene "graph": the autograd graph of the step scene's attention call
// (attention_call.h), drawn as boxes and edges: op nodes (BmmBackward,
// SoftmaxBackward, ...) in layers by depth, the leaves Q, K, V on top, the
// loss at the bottom, each edge labelled with the tensor it carries and its
// shape. Next / Prev (or the arrow keys) walk the backward sweep node by
// node in the engine's own order, as ag::backward's observer reported it:
// the node being run is highlighted, with the gradient it receives and the
// gradients it sends to each input as maps beside the graph. Hovering a box
// shows its shape, dtype and gradient norm.
//
// Declared in a header (as the file scene is) so that the null-backend test
// can read the boxes, the sweep and the hover text.
#pragma once

#include <imgui.h>

#include <memory>
#include <string>
#include <vector>

#include "attention_call.h"
#include "scene.h"

namespace ag::viewer {

class GraphScene : public Scene {
 public:
  GraphScene();
  const char* name() const override { return "graph"; }
  const char* label() const override { return "Graph"; }
  void draw() override;
  std::map<std::string, Tensor> inputs() const override;
  // step: the backward step shown.
  std::vector<Knob> knobs() override;

  // One box of the drawing: an op node, or a tensor without a node (a leaf
  // that requires grad, or a constant such as G or the mask's fill value).
  struct Box {
    const Node* node = nullptr;  // set for op nodes
    Tensor tensor;               // set for leaves and constants
    std::string label;           // "BmmBackward", "Q", "G", "-1e+06"
    std::string output;          // op nodes: what their output is called ("weights"; "L")
    int depth = 0;               // longest path from the loss's node
    int step = -1;               // the node's position in the sweep (-1: not a node)
    ImVec2 min, max;             // where it was drawn last frame (screen coordinates)
  };
  const std::vector<Box>& boxes() const { return boxes_; }
  // The sweep as the observer saw it.
  const std::vector<ObservedStep>& steps() const { return call_->steps; }
  // The step shown; it starts at the output's BmmBackward (default_step()),
  // the first node that sends gradients to two inputs.
  int current_step() const { return current_; }
  int default_step() const;
  // The tooltip of the box under the mouse in the last frame ("" when none).
  const std::string& hover_text() const { return hover_text_; }

 private:
  // ---- state: the knobs, the call, its graph as boxes, the step shown ----------
  CallKnobs knobs_;
  std::unique_ptr<AttentionCall> call_;
  std::vector<Box> boxes_;
  struct Edge {
    size_t from, to;  // boxes_: the input's box, the consuming node's box
    size_t input;     // which input of `to`
  };
  std::vector<Edge> edges_;
  int current_ = 0;
  std::string hover_text_;
  std::string error_;

  void rebuild();
  void build_graph();  // boxes_ and edges_ from call_->loss, read-only

  // ---- panels ----------------------------------------------------------------------
  void draw_controls();
  void draw_graph(ImVec2 size);
  void draw_step();
  std::string tooltip(const Box& box) const;
};

}  // namespace ag::viewer
