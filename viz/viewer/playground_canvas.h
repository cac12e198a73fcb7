// The playground's plane (scene_playground.cpp): keys and queries are points
// that the learner drags with the mouse, adds and removes with a right-click
// menu; lines from the selected query to every key show its weights.
//
//   if (canvas.interact(points)) rerun the modules;   // drags, selection
//   canvas.paint(points, weights);                    // grid, lines, points
//   if (canvas.menu(points)) rerun the modules;       // add / remove
#pragma once

#include <imgui.h>

#include <vector>

#include "attograd/attograd.h"

namespace ag::viewer {

// What the learner edits: keys with one scalar value each, queries, the
// valid length, the selected query (whose lines are drawn).
struct PlaygroundPoints {
  static constexpr int kMaxKeys = 10, kMaxQueries = 6;
  std::vector<ImVec2> keys, queries;
  std::vector<float> values;  // one per key
  int valid_len = 0;
  int selected_query = 0;

  // A new key's value is its index; a valid_len that covered every key
  // keeps covering them.
  void add_key(ImVec2 at);
  void remove_key(size_t i);
  // A new query becomes the selected one.
  void add_query(ImVec2 at);
  void remove_query(size_t i);
};

class PlaygroundCanvas {
 public:
  static constexpr float kExtent = 3.0f;  // the canvas shows [-3, 3] x [-3, 3]

  // A square button `side` pixels wide at the cursor: left button grabs and
  // drags a point (a query also becomes the selected one), right button
  // opens the add/remove menu, hovering a point shows its tooltip. Returns
  // true when a point moved.
  bool interact(PlaygroundPoints& points, float side);
  // The canvas itself, under the button: background, grid and axes, the
  // lines from the selected query to every key (thicker and brighter for
  // more weight: `weights` [Tq, Tk], or undefined for no lines), the keys
  // (circles coloured by value) and the queries (diamonds).
  void paint(const PlaygroundPoints& points, const Tensor& weights) const;
  // The right-click menu, when open; returns true when it added or removed
  // a point.
  bool menu(PlaygroundPoints& points);

  // The mapping of the last frame: screen = origin + scale * (x, -y).
  double scale() const { return scale_; }
  ImVec2 origin() const { return origin_; }

 private:
  // A grabbed point: a key or a query, by index.
  struct PointRef {
    bool is_query = false;
    int index = -1;
    bool valid() const { return index >= 0; }
  };
  ImVec2 to_screen(ImVec2 p) const;
  ImVec2 to_plane(ImVec2 screen) const;
  PointRef point_at(const PlaygroundPoints& points, ImVec2 mouse) const;
  void draw_grid(ImDrawList* draw) const;
  void draw_label(ImDrawList* draw, ImVec2 at, ImU32 color, const char* label) const;
  void draw_keys(ImDrawList* draw, const PlaygroundPoints& points) const;
  void draw_queries(ImDrawList* draw, const PlaygroundPoints& points) const;

  ImVec2 corner_;
  float side_ = 0;
  double scale_ = 1.0;
  ImVec2 origin_;
  PointRef dragged_;
  ImVec2 grab_offset_;   // point minus mouse at the grab, so the point does not jump
  PointRef menu_point_;  // what the right-click menu acts on
  ImVec2 menu_at_;       // where it was opened, in plane coordinates
};

}  // namespace ag::viewer
