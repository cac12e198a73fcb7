// Scene "graph" (scene_graph.h): the attention call's autograd graph and a
// stepper over the engine's backward sweep.
#include "scene_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "heatmap_widget.h"

namespace ag::viewer {
namespace {

// What each op's backward lambda computes, as its source comment says it;
// g is the gradient the node receives, dL/d(its output).
struct Formula {
  const char* op;
  const char* text;
};
const Formula kFormulas[] = {
    {"SumBackward", "forward: L = sum(x)\nbackward: dx = g, broadcast to x's shape"},
    {"MulBackward", "forward: out = a * b\nbackward: da = g * b,  db = g * a"},
    {"BmmBackward", "forward: out = bmm(A, B)\nbackward: dA = bmm(g, B^T),  dB = bmm(A^T, g)"},
    {"DropoutBackward",
     "forward: out = x * mask  (mask: 0 or 1/(1-p))\nbackward: dx = g * mask, the same mask"},
    {"SoftmaxBackward", "forward: y = softmax(x, -1)\nbackward: dx = y * (g - sum(g * y, -1))"},
    {"WhereBackward",
     "forward: out = where(keep, a, b)\nbackward: da = where(keep, g, 0),  db = where(keep, 0, g)"},
    {"DivBackward", "forward: out = a / b\nbackward: da = g / b,  db = -g * a / b^2"},
    {"TransposeBackward", "forward: y = transpose(x, 1, 2)\nbackward: dx = transpose(g, 1, 2)"},
};

const char* formula_of(const std::string& op) {
  for (const Formula& f : kFormulas)
    if (op == f.op) return f.text;
  return "";
}

// How an input is called in labels: its name (Q, weights, G), a scalar
// constant's value, or the op that made it.
std::string tensor_label(const Tensor& t) {
  if (!t.name().empty()) return t.name();
  if (t.numel() == 1 && !t.requires_grad()) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", t.item());
    return text;
  }
  return t.grad_fn() ? t.grad_fn_name() + " output" : std::string("tensor");
}
// The same for a node's input: a leaf is at hand; an op's output by its name.
std::string tensor_label(const NodeInput& input) {
  if (input.is_leaf()) return tensor_label(input.tensor());
  return input.name().empty() ? input.grad_fn_name() + " output" : input.name();
}

// Axis names of a map from its size: the call's sizes differ (Tq = 3 rows
// of queries, Tk = 5 keys, d = 4 features, v = 3 value features as columns).
std::pair<const char*, const char*> axis_names(const Tensor& m) {
  auto name = [](int64_t n, bool column) -> const char* {
    if (n == AttentionCall::kKeys) return "Keys";
    if (n == AttentionCall::kDim) return "Features";
    if (n == AttentionCall::kQueries) return column ? "Value features" : "Queries";
    return "";
  };
  if (m.numel() == 1) return {"", ""};
  return {name(m.size(1), true), name(m.size(0), false)};
}

const ImU32 kNodeFill = IM_COL32(45, 65, 100, 255);
const ImU32 kDoneFill = IM_COL32(40, 85, 60, 255);
const ImU32 kCurrentFill = IM_COL32(235, 150, 40, 255);
const ImU32 kLeafFill = IM_COL32(30, 120, 70, 255);
const ImU32 kConstantFill = IM_COL32(60, 60, 60, 255);
const ImU32 kEdge = IM_COL32(140, 140, 150, 255);
const ImU32 kGradient = IM_COL32(235, 150, 40, 255);

// A filled triangle pointing from `from` to `tip`, ending at `tip`.
void arrow_head(ImDrawList* draw, ImVec2 from, ImVec2 tip, ImU32 color, float size) {
  const float dx = tip.x - from.x, dy = tip.y - from.y;
  const float length = std::max(1.0f, std::sqrt(dx * dx + dy * dy));
  const float ux = dx / length, uy = dy / length;
  draw->AddTriangleFilled(
      tip, ImVec2(tip.x - ux * size - uy * size * 0.5f, tip.y - uy * size + ux * size * 0.5f),
      ImVec2(tip.x - ux * size + uy * size * 0.5f, tip.y - uy * size - ux * size * 0.5f), color);
}

}  // namespace

GraphScene::GraphScene() {
  rebuild();
}

std::map<std::string, Tensor> GraphScene::inputs() const {
  return call_ ? call_->inputs() : std::map<std::string, Tensor>{};
}

std::vector<Knob> GraphScene::knobs() {
  return {number_knob("step", "the backward step shown (Prev / Next), 1 = the first", 1, 99, true,
                      [this](double step) {
                        const int count = call_ ? static_cast<int>(call_->steps.size()) : 0;
                        AG_CHECK(step <= count, "attograd-viewer",
                                 "takes a step from 1 to " + std::to_string(count) + ", got " +
                                     std::to_string(static_cast<int>(step)));
                        current_ = static_cast<int>(step) - 1;
                      })};
}

void GraphScene::rebuild() {
  error_.clear();
  try {
    call_ = std::make_unique<AttentionCall>(knobs_);
    build_graph();
    current_ = default_step();
  } catch (const Error& e) {
    call_.reset();
    boxes_.clear();
    edges_.clear();
    error_ = e.what();
  }
}

int GraphScene::default_step() const {
  const Node* output_node = call_->stages[kOutput].grad_fn().get();
  for (size_t i = 0; i < call_->steps.size(); ++i)
    if (call_->steps[i].node == output_node) return static_cast<int>(i);
  return 0;
}

// Walks the graph from the loss's node through Node::inputs() (reading only)
// and gives every node, leaf and constant a box, every input an edge.
void GraphScene::build_graph() {
  boxes_.clear();
  edges_.clear();
  std::map<const void*, size_t> box_of;  // Node* or TensorImpl* -> index in boxes_
  std::map<const Node*, int> step_of;
  for (size_t i = 0; i < call_->steps.size(); ++i)
    step_of[call_->steps[i].node] = static_cast<int>(i);

  const Node* root = call_->loss.grad_fn().get();
  boxes_.push_back({root, Tensor(), root->name(), "L", 0, step_of.at(root), {}, {}});
  box_of[root] = 0;
  for (size_t b = 0; b < boxes_.size(); ++b) {  // boxes_ grows: a breadth-first walk
    const Node* node = boxes_[b].node;
    if (node == nullptr) continue;
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const NodeInput& input = node->inputs()[i];
      if (!input.defined()) continue;
      const Node* child = input.grad_fn().get();
      const void* key = child ? static_cast<const void*>(child) : input.tensor().impl();
      auto [it, inserted] = box_of.try_emplace(key, boxes_.size());
      if (inserted) {
        Box box;
        box.node = child;
        box.label = child ? child->name() : tensor_label(input);
        if (child) {
          box.output = tensor_label(input);  // what the node made: the edge's tensor
        } else {
          box.tensor = input.tensor();
        }
        box.step = child ? step_of.at(child) : -1;
        boxes_.push_back(box);
      }
      edges_.push_back({it->second, b, i});
    }
  }
  // Depth: the longest path from the root, so that every box sits above
  // the nodes that consume it (a few passes settle a graph this small).
  for (bool changed = true; changed;) {
    changed = false;
    for (const Edge& e : edges_) {
      if (boxes_[e.from].depth < boxes_[e.to].depth + 1) {
        boxes_[e.from].depth = boxes_[e.to].depth + 1;
        changed = true;
      }
    }
  }
}

void GraphScene::draw() {
  hover_text_.clear();
  draw_panes(
      280, [&] { draw_controls(); }, error_,
      [&] {
        const ImVec2 avail = ImGui::GetContentRegionAvail();
        draw_graph(ImVec2(std::floor(avail.x * 0.55f), avail.y));
        ImGui::SameLine();
        ImGui::BeginChild("step", ImVec2(0, 0), true);
        draw_step();
        ImGui::EndChild();
      });
}

// ---- panel: knobs, the stepper, the legend ------------------------------------------
void GraphScene::draw_controls() {
  ImGui::TextUnformatted("The step scene's call");
  if (draw_call_knobs(knobs_)) rebuild();
  if (!call_) return;

  ImGui::Separator();
  const int count = static_cast<int>(call_->steps.size());
  ImGui::Text("Backward sweep: step %d of %d", current_ + 1, count);
  draw_prev_next(current_, count);
  ImGui::SameLine();
  if (ImGui::Button("Restart")) current_ = 0;
  show_note("Left / Right arrow keys step too; click a node to jump to it.");

  ImGui::Separator();
  show_note(
      "The forward ran top to bottom: Q, K, V at the top, L = sum(output * G) at the bottom. "
      "Each box is the node an op recorded, named after its backward; each edge carries a "
      "tensor, labelled with its name and shape.");
  ImGui::Spacing();
  show_note(
      "backward() sorts the nodes topologically and runs them from L up, each node once, "
      "after every node that uses its output: the order the steps follow is the engine's own, "
      "reported by ag::backward's observer. Orange: the node being run, and the gradients it "
      "sends up its edges. Green: nodes already run.");
  ImGui::Spacing();
  show_note(
      "Grey boxes are constants: G, the scale sqrt(d) = 2 and the mask's fill value -1e6. "
      "Nothing requires their gradient, so none is sent to them.");
}

// ---- panel: the graph ------------------------------------------------------------------
void GraphScene::draw_graph(ImVec2 size) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float line = ImGui::GetTextLineHeight();
  int max_depth = 0;
  for (const Box& box : boxes_) max_depth = std::max(max_depth, box.depth);
  const float row = size.y / static_cast<float>(max_depth + 1);
  const float box_height = line + 10;

  // 1. Layout, row by row from the loss (bottom) up: each box goes above
  //    the nodes that consume it, its inputs spread left to right in order,
  //    then boxes of a row are pushed apart so that none overlap.
  std::vector<float> x(boxes_.size(), origin.x + size.x / 2), width(boxes_.size());
  for (size_t b = 0; b < boxes_.size(); ++b)
    width[b] = ImGui::CalcTextSize(boxes_[b].label.c_str()).x + 16;
  const float spread = size.x / 5;
  const float label_room = ImGui::CalcTextSize("scores [1, 3, 5]").x + 12;
  for (int depth = 1; depth <= max_depth; ++depth) {
    std::vector<size_t> in_row;
    for (size_t b = 0; b < boxes_.size(); ++b) {
      if (boxes_[b].depth != depth) continue;
      float sum = 0;
      int uses = 0;
      for (const Edge& e : edges_) {
        if (e.from != b) continue;
        const float inputs = static_cast<float>(boxes_[e.to].node->inputs().size());
        sum += x[e.to] + (static_cast<float>(e.input) - (inputs - 1) / 2) * spread;
        ++uses;
      }
      x[b] = sum / static_cast<float>(std::max(uses, 1));
      in_row.push_back(b);
    }
    std::sort(in_row.begin(), in_row.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
    for (size_t k = 1; k < in_row.size(); ++k) {
      const size_t a = in_row[k - 1], b = in_row[k];
      x[b] = std::max(x[b], x[a] + (width[a] + width[b]) / 2 + 24);
    }
    if (!in_row.empty()) {  // keep the row inside the canvas, with room for edge labels on the left
      const float left = x[in_row.front()] - width[in_row.front()] / 2 - (origin.x + label_room);
      const float right = x[in_row.back()] + width[in_row.back()] / 2 - (origin.x + size.x);
      const float shift = right > 0 ? -right : (left < 0 ? -left : 0);
      for (size_t b : in_row) x[b] += shift;
    }
  }
  for (size_t b = 0; b < boxes_.size(); ++b) {
    const float y = origin.y + (static_cast<float>(max_depth - boxes_[b].depth) + 0.5f) * row;
    boxes_[b].min = ImVec2(std::floor(x[b] - width[b] / 2), std::floor(y - box_height / 2));
    boxes_[b].max = ImVec2(boxes_[b].min.x + width[b], boxes_[b].min.y + box_height);
  }

  // 2. Edges, input above to consumer below, labelled "name [shape]"; the
  //    current node's edges carry its gradients up, in orange.
  const ObservedStep& step = call_->steps[static_cast<size_t>(current_)];
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 dim_text = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  for (const Edge& e : edges_) {
    const Box& from = boxes_[e.from];
    const Box& to = boxes_[e.to];
    const ImVec2 a((from.min.x + from.max.x) / 2, from.max.y);
    const ImVec2 b((to.min.x + to.max.x) / 2, to.min.y);
    const bool active = to.node == step.node && step.grad_inputs[e.input].defined();
    draw->AddLine(a, b, active ? kGradient : kEdge, active ? 3.0f : 1.0f);
    if (active) {
      arrow_head(draw, b, a, kGradient, 10);
    } else {
      arrow_head(draw, a, b, kEdge, 7);
    }
    // The label sits 40% down the edge, where converging edges are still
    // apart: left of a node's first input, right of the others (inputs are
    // laid out left to right).
    const NodeInput& input = to.node->inputs()[e.input];
    std::string label = tensor_label(input);
    label.append(" ").append(shape_str(input.shape()));
    const ImVec2 at(a.x + (b.x - a.x) * 0.4f, a.y + (b.y - a.y) * 0.4f - line / 2);
    const float label_width = ImGui::CalcTextSize(label.c_str()).x;
    const bool left = e.input == 0 && to.node->inputs().size() > 1;
    const float label_x = left ? at.x - label_width - 6 : at.x + 6;
    draw->AddText(ImVec2(label_x, at.y), active ? kGradient : dim_text, label.c_str());
  }

  // 3. Boxes: op nodes (current orange, done green), leaves, constants.
  for (const Box& box : boxes_) {
    ImU32 fill = box.node ? kNodeFill : (box.tensor.requires_grad() ? kLeafFill : kConstantFill);
    if (box.node && box.step < current_) fill = kDoneFill;
    if (box.node && box.step == current_) fill = kCurrentFill;
    const float rounding = box.node ? 3.0f : box_height / 2;
    draw->AddRectFilled(box.min, box.max, fill, rounding);
    const bool current = box.node && box.step == current_;
    draw->AddText(ImVec2(box.min.x + 8, box.min.y + 5),
                  current ? IM_COL32(0, 0, 0, 255)
                          : (box.node || box.tensor.requires_grad() ? text : dim_text),
                  box.label.c_str());
    if (ImGui::IsMouseHoveringRect(box.min, box.max)) {
      hover_text_ = tooltip(box);
      ImGui::BeginTooltip();
      ImGui::TextUnformatted(hover_text_.c_str());
      ImGui::EndTooltip();
      draw->AddRect(box.min, box.max, IM_COL32(255, 255, 255, 255), rounding, 0, 2.0f);
      if (box.node && ImGui::IsMouseClicked(0)) current_ = box.step;
    }
  }
  // Below the root: what it computes.
  const Box& root = boxes_[0];
  draw->AddText(ImVec2(root.max.x + 8, root.min.y + 5), dim_text, "L = sum(output * G)");
  ImGui::Dummy(size);
}

std::string GraphScene::tooltip(const Box& box) const {
  std::ostringstream out;
  out.precision(4);
  if (box.node) {
    const ObservedStep& step = call_->steps[static_cast<size_t>(box.step)];
    out << box.label << " (backward step " << box.step + 1 << ")\n"
        << "output " << box.output << " " << shape_str(box.node->output_shape()) << " "
        << dtype_name(step.grad_output.dtype()) << "\n"
        << "|dL/d" << box.output << "| = " << norm(step.grad_output);
  } else if (box.tensor.requires_grad()) {
    out << box.label << ": leaf " << describe(box.tensor) << "\n"
        << "|grad()| = " << norm(box.tensor.grad());
  } else {
    out << box.label << ": constant " << describe(box.tensor) << "\n"
        << "no gradient (does not require grad)";
  }
  return out.str();
}

// ---- panel: the step being run ----------------------------------------------------------
void GraphScene::draw_step() {
  const ObservedStep& step = call_->steps[static_cast<size_t>(current_)];
  const Node& node = *step.node;
  ImGui::Text("Step %d of %zu: %s", current_ + 1, call_->steps.size(), node.name().c_str());
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(200, 200, 120, 255));
  ImGui::TextWrapped("%s", formula_of(node.name()));
  ImGui::PopStyleColor();
  ImGui::Spacing();

  // The maps (g, then one per input) share the panel's height, so that all
  // of them fit a short window (smaller cells) and none is cut by its edge.
  // Each map's title wraps above it: in a narrow window the gradient's norm
  // goes to a second line rather than off the panel.
  const float labels = 2 * ImGui::GetTextLineHeightWithSpacing();
  const float share =
      ImGui::GetContentRegionAvail().y / static_cast<float>(1 + step.grad_inputs.size());
  auto map = [&](const std::string& id, const std::string& title, const Tensor& t) {
    const Tensor m = as_matrix(t);
    const auto [xlabel, ylabel] = axis_names(m);
    const float top = ImGui::GetCursorPosY();
    ImGui::TextWrapped("%s", title.c_str());
    const float height = std::max(share - (ImGui::GetCursorPosY() - top), 5 * 10 + labels);
    draw_heatmap({id, "", m, Tensor(), viz::fit_scale(m.to_vector(), viz::Colormap::Diverging),
                  xlabel, ylabel, ylabel, xlabel, 40, true},
                 ImVec2(0, std::min(height, 5 * 40 + labels)));
  };
  std::ostringstream title;
  title.precision(3);
  const auto box =
      std::find_if(boxes_.begin(), boxes_.end(), [&](const Box& b) { return b.node == &node; });
  title << "receives g = dL/d" << box->output << " " << shape_str(step.grad_output.shape())
        << "   |g| = " << norm(step.grad_output);
  map("graph/grad_out", title.str(), step.grad_output);

  for (size_t i = 0; i < step.grad_inputs.size(); ++i) {
    const NodeInput& input = node.inputs()[i];
    const Tensor& g = step.grad_inputs[i];
    std::ostringstream line;
    line.precision(3);
    line << "sends to input " << i << " (" << tensor_label(input) << "): ";
    if (!g.defined()) {
      line << "nothing, " << tensor_label(input) << " does not require grad";
      ImGui::Spacing();
      show_note(line.str().c_str());
      continue;
    }
    line << "d" << tensor_label(input) << " " << shape_str(g.shape()) << "   |g| = " << norm(g);
    std::ostringstream id;
    id << "graph/grad_in" << i;
    map(id.str(), line.str(), g);
  }
}

std::unique_ptr<Scene> make_graph_scene() {
  return std::make_unique<GraphScene>();
}

}  // namespace ag::viewer
