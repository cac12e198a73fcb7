// The playground's plane: dragging, the right-click menu and the drawing of
// points and weight lines (see playground_canvas.h).
#include "playground_canvas.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "heatmap_widget.h"

namespace ag::viewer {
namespace {

constexpr float kPickRadius = 12.0f;  // pixels: how close a click must be to grab a point

float distance(ImVec2 a, ImVec2 b) {
  return std::hypot(a.x - b.x, a.y - b.y);
}

ImVec2 clamp_to_canvas(ImVec2 p) {
  const float e = PlaygroundCanvas::kExtent;
  return ImVec2(std::clamp(p.x, -e, e), std::clamp(p.y, -e, e));
}

}  // namespace

// ---- the points ------------------------------------------------------------------------------
void PlaygroundPoints::add_key(ImVec2 at) {
  if (valid_len == static_cast<int>(keys.size())) ++valid_len;
  keys.push_back(at);
  values.push_back(static_cast<float>(values.size()));
}

void PlaygroundPoints::remove_key(size_t i) {
  keys.erase(keys.begin() + static_cast<ptrdiff_t>(i));
  values.erase(values.begin() + static_cast<ptrdiff_t>(i));
  valid_len = std::min(valid_len, static_cast<int>(keys.size()));
}

void PlaygroundPoints::add_query(ImVec2 at) {
  queries.push_back(at);
  selected_query = static_cast<int>(queries.size()) - 1;
}

void PlaygroundPoints::remove_query(size_t i) {
  queries.erase(queries.begin() + static_cast<ptrdiff_t>(i));
  selected_query = std::min(selected_query, static_cast<int>(queries.size()) - 1);
}

// ---- the canvas -------------------------------------------------------------------------------
ImVec2 PlaygroundCanvas::to_screen(ImVec2 p) const {
  const float s = static_cast<float>(scale_);
  return ImVec2(origin_.x + s * p.x, origin_.y - s * p.y);
}

ImVec2 PlaygroundCanvas::to_plane(ImVec2 screen) const {
  const float s = static_cast<float>(scale_);
  return ImVec2((screen.x - origin_.x) / s, (origin_.y - screen.y) / s);
}

// The point under the mouse, queries first (they are drawn on top), the
// last drawn key first among keys.
PlaygroundCanvas::PointRef PlaygroundCanvas::point_at(const PlaygroundPoints& points,
                                                      ImVec2 mouse) const {
  for (int i = static_cast<int>(points.queries.size()) - 1; i >= 0; --i) {
    if (distance(to_screen(points.queries[static_cast<size_t>(i)]), mouse) < kPickRadius) {
      return {true, i};
    }
  }
  for (int i = static_cast<int>(points.keys.size()) - 1; i >= 0; --i) {
    if (distance(to_screen(points.keys[static_cast<size_t>(i)]), mouse) < kPickRadius) {
      return {false, i};
    }
  }
  return {};
}

bool PlaygroundCanvas::interact(PlaygroundPoints& points, float side) {
  corner_ = ImGui::GetCursorScreenPos();
  side_ = side;
  scale_ = std::floor(side / (2.0f * kExtent));
  origin_ = ImVec2(std::floor(corner_.x + side / 2), std::floor(corner_.y + side / 2));
  ImGui::InvisibleButton("canvas", ImVec2(side, side),
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  auto point = [&](PointRef ref) -> ImVec2& {
    return ref.is_query ? points.queries[static_cast<size_t>(ref.index)]
                        : points.keys[static_cast<size_t>(ref.index)];
  };
  bool moved_any = false;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (ImGui::IsItemActivated() && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    dragged_ = point_at(points, mouse);
    if (dragged_.valid()) {
      const ImVec2 p = point(dragged_), at = to_plane(mouse);
      grab_offset_ = ImVec2(p.x - at.x, p.y - at.y);
      if (dragged_.is_query) points.selected_query = dragged_.index;
    }
  }
  if (!ImGui::IsItemActive()) dragged_ = {};
  if (dragged_.valid()) {
    ImVec2& p = point(dragged_);
    const ImVec2 at = to_plane(mouse);
    const ImVec2 moved = clamp_to_canvas(ImVec2(at.x + grab_offset_.x, at.y + grab_offset_.y));
    if (moved.x != p.x || moved.y != p.y) {
      p = moved;
      moved_any = true;
    }
  }
  if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) {
    menu_point_ = point_at(points, mouse);
    menu_at_ = clamp_to_canvas(to_plane(mouse));
    ImGui::OpenPopup("canvas menu");
  }
  if (ImGui::IsItemHovered() && !dragged_.valid()) {
    const PointRef hovered = point_at(points, mouse);
    if (hovered.valid()) {
      const size_t i = static_cast<size_t>(hovered.index);
      const ImVec2 p = point(hovered);
      if (hovered.is_query) {
        ImGui::SetTooltip("q%zu = (%.2f, %.2f)\ndrag to move, click to select", i, p.x, p.y);
      } else {
        ImGui::SetTooltip("k%zu = (%.2f, %.2f), value v%zu = %.2f\ndrag to move", i, p.x, p.y, i,
                          points.values[i]);
      }
    }
  }
  return moved_any;
}

void PlaygroundCanvas::paint(const PlaygroundPoints& points, const Tensor& weights) const {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->PushClipRect(corner_, ImVec2(corner_.x + side_, corner_.y + side_), true);
  draw_grid(draw);
  if (weights.defined() && !points.queries.empty()) {
    const size_t q = static_cast<size_t>(points.selected_query);
    const std::vector<double> row = narrow(weights, 0, points.selected_query, 1).to_vector();
    const ImVec2 from = to_screen(points.queries[q]);
    for (size_t j = 0; j < points.keys.size(); ++j) {
      const float w = static_cast<float>(row[j]);
      draw->AddLine(from, to_screen(points.keys[j]),
                    IM_COL32(255, 200, 90, static_cast<int>(40 + 215 * w)), 1.0f + 9.0f * w);
    }
  }
  draw_keys(draw, points);
  draw_queries(draw, points);
  draw->PopClipRect();
}

bool PlaygroundCanvas::menu(PlaygroundPoints& points) {
  if (!ImGui::BeginPopup("canvas menu")) return false;
  bool changed = false;
  if (menu_point_.valid()) {
    const size_t i = static_cast<size_t>(menu_point_.index);
    const bool last = menu_point_.is_query ? points.queries.size() <= 1 : points.keys.size() <= 1;
    char label[32];
    std::snprintf(label, sizeof label, "remove %s%zu", menu_point_.is_query ? "q" : "k", i);
    if (ImGui::MenuItem(label, nullptr, false, !last)) {
      if (menu_point_.is_query) {
        points.remove_query(i);
      } else {
        points.remove_key(i);
      }
      changed = true;
    }
  } else {
    if (ImGui::MenuItem("add a key here", nullptr, false,
                        points.keys.size() < static_cast<size_t>(PlaygroundPoints::kMaxKeys))) {
      points.add_key(menu_at_);
      changed = true;
    }
    if (ImGui::MenuItem(
            "add a query here", nullptr, false,
            points.queries.size() < static_cast<size_t>(PlaygroundPoints::kMaxQueries))) {
      points.add_query(menu_at_);
      changed = true;
    }
  }
  ImGui::EndPopup();
  return changed;
}

// Background, a grid line every unit, the two axes with their tick labels.
void PlaygroundCanvas::draw_grid(ImDrawList* draw) const {
  const ImVec2 corner = corner_;
  const float side = side_;
  draw->AddRectFilled(corner, ImVec2(corner.x + side, corner.y + side), IM_COL32(24, 26, 32, 255));
  const ImU32 grid = IM_COL32(60, 64, 76, 255), axis = IM_COL32(140, 144, 160, 255);
  const ImU32 label = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  for (int u = -3; u <= 3; ++u) {
    const float f = static_cast<float>(u);
    const ImVec2 vx = to_screen(ImVec2(f, 0.0f)), hy = to_screen(ImVec2(0.0f, f));
    draw->AddLine(ImVec2(vx.x, corner.y), ImVec2(vx.x, corner.y + side), u == 0 ? axis : grid);
    draw->AddLine(ImVec2(corner.x, hy.y), ImVec2(corner.x + side, hy.y), u == 0 ? axis : grid);
    if (u == 0 || u == -3) continue;
    char text[12];  // any int: -O1 cannot see that u is in [-2, 3]
    std::snprintf(text, sizeof text, "%d", u);
    draw->AddText(ImVec2(vx.x + 3.0f, origin_.y + 2.0f), label, text);
    draw->AddText(ImVec2(origin_.x + 4.0f, hy.y - ImGui::GetTextLineHeight() - 1.0f), label, text);
  }
}

// A point's label on its right, or on its left where the canvas ends.
void PlaygroundCanvas::draw_label(ImDrawList* draw, ImVec2 at, ImU32 color,
                                  const char* label) const {
  const float width = ImGui::CalcTextSize(label).x;
  const float right_edge = origin_.x + static_cast<float>(scale_) * kExtent;
  const float x = at.x + 12.0f + width <= right_edge ? at.x + 12.0f : at.x - 12.0f - width;
  draw->AddText(ImVec2(x, at.y - 8.0f), color, label);
}

// Keys are circles filled with the colour of their value; keys stacked on
// one spot share one label ("k0-k9"), so that the labels stay readable.
void PlaygroundCanvas::draw_keys(ImDrawList* draw, const PlaygroundPoints& points) const {
  const viz::ColorScale scale = viz::fit_scale(
      std::vector<double>(points.values.begin(), points.values.end()), viz::Colormap::Magma);
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  for (size_t i = 0; i < points.keys.size(); ++i) {
    const ImVec2 c = to_screen(points.keys[i]);
    const bool masked = static_cast<int>(i) >= points.valid_len && points.valid_len > 0;
    draw->AddCircleFilled(c, 9.0f, to_imgui_color(scale(points.values[i])));
    draw->AddCircle(c, 9.0f, masked ? IM_COL32(120, 120, 120, 255) : IM_COL32(230, 230, 240, 255),
                    0, 2.0f);
    size_t first = i, last = i;
    for (size_t j = 0; j < points.keys.size(); ++j) {
      if (distance(to_screen(points.keys[j]), c) < 1.0f) {
        first = std::min(first, j);
        last = std::max(last, j);
      }
    }
    if (first != i) continue;
    char label[48];
    if (last == first) {
      std::snprintf(label, sizeof label, "k%zu v=%.3g%s", i, points.values[i],
                    masked ? " (masked)" : "");
    } else {
      std::snprintf(label, sizeof label, "k%zu-k%zu (stacked)", first, last);
    }
    draw_label(draw, c, text, label);
  }
}

// Queries are diamonds; the selected one (whose lines are drawn) is filled.
void PlaygroundCanvas::draw_queries(ImDrawList* draw, const PlaygroundPoints& points) const {
  for (size_t i = 0; i < points.queries.size(); ++i) {
    const ImVec2 c = to_screen(points.queries[i]);
    const float r = 10.0f;
    const ImVec2 a(c.x, c.y - r), b(c.x + r, c.y), d(c.x, c.y + r), e(c.x - r, c.y);
    const ImU32 color = IM_COL32(255, 200, 90, 255);
    if (static_cast<int>(i) == points.selected_query) {
      draw->AddQuadFilled(a, b, d, e, color);
    } else {
      draw->AddQuadFilled(a, b, d, e, IM_COL32(24, 26, 32, 255));
    }
    draw->AddQuad(a, b, d, e, color, 2.0f);
    char label[32];
    std::snprintf(label, sizeof label, "q%zu", i);
    draw_label(draw, c, color, label);
  }
}

}  // namespace ag::viewer
