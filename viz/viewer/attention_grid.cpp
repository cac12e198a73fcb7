// A grid of attention maps per block and head (see attention_grid.h).
#include "attention_grid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "heatmap_widget.h"

namespace ag::viewer {

void draw_attention_grid(const AttentionGrid& grid, ImVec2 size) {
  AG_CHECK(grid.maps.defined() && grid.maps.dim() == 4, "attention grid " + grid.id,
           "expected maps [blocks, heads, rows, cols], got " +
               (grid.maps.defined() ? shape_str(grid.maps.shape()) : std::string("none")));
  const int64_t blocks = grid.maps.size(0), heads = grid.maps.size(1);
  const int64_t rows = grid.maps.size(2), cols = grid.maps.size(3);
  AG_CHECK(static_cast<int64_t>(grid.row_tokens.size()) == rows &&
               static_cast<int64_t>(grid.col_tokens.size()) == cols,
           "attention grid " + grid.id,
           "maps of " + std::to_string(rows) + " x " + std::to_string(cols) +
               " need as many tokens, got " + std::to_string(grid.row_tokens.size()) + " x " +
               std::to_string(grid.col_tokens.size()));
  const viz::ColorScale scale{viz::Colormap::Viridis, 0.0, 1.0};
  const ImGuiStyle& style = ImGui::GetStyle();
  const float colorbar_width = ImGui::CalcTextSize("0.75").x + 30.0f;
  const float map_width =
      std::floor((size.x - colorbar_width - style.ItemSpacing.x * static_cast<float>(heads)) /
                 static_cast<float>(heads));
  const float map_height = std::floor(
      (size.y - style.ItemSpacing.y * static_cast<float>(blocks - 1)) / static_cast<float>(blocks));

  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      if (h > 0) ImGui::SameLine();
      char suffix[48], title[64];
      std::snprintf(suffix, sizeof suffix, "/b%lldh%lld", static_cast<long long>(b),
                    static_cast<long long>(h));
      std::snprintf(title, sizeof title, "block %lld, head %lld", static_cast<long long>(b),
                    static_cast<long long>(h));
      HeatmapView view{grid.id + suffix,
                       title,
                       grid.maps.narrow(0, b, 1).narrow(1, h, 1).reshape({rows, cols}),
                       grid.keep,
                       scale,
                       grid.col_name,
                       grid.row_name,
                       grid.row_name,
                       grid.col_name};
      view.row_labels = grid.row_tokens;
      view.col_labels = grid.col_tokens;
      view.max_cell = 28.0f;
      view.fit_axis_label = true;
      draw_heatmap(view, ImVec2(map_width, map_height));
    }
    if (b == 0) colorbar_beside_last_map((grid.id + "/colorbar").c_str(), scale);
  }
}

}  // namespace ag::viewer
