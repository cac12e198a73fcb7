// The heatmap widget: cells, ticks, labels, hatching and the hover tooltip.
#include "heatmap_widget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ag::viewer {

ImU32 to_imgui_color(viz::Rgb rgb) {
  return IM_COL32(rgb.r, rgb.g, rgb.b, 255);
}

std::vector<DrawnHeatmap>& drawn_heatmaps() {
  static std::vector<DrawnHeatmap> heatmaps;
  return heatmaps;
}

namespace {

// The hatch pattern in the font atlas: a square of kHatchBase with kHatchStripe
// diagonals ("/") every kHatchPeriod pixels, in the colours show_heatmaps uses
// (no colour map produces a grey). A hatched area is drawn as textured
// squares cut from it, one per at most kHatchPiece pixels: in the atlas, the
// pattern costs no draw call of its own, and software OpenGL under Xvfb
// fills a few squares much faster than the thousands of thin lines the
// stripes would take (in the transformer scene, 10 ms a frame).
constexpr int kHatchPeriod = 6;
constexpr int kHatchPiece = 64;
constexpr int kHatchSide = kHatchPiece + kHatchPeriod;
int g_hatch_rect = -1;  // the pattern's custom rectangle in the font atlas

// Fills the rectangle [a, b) (whole pixels) with the pattern, its stripes
// where (x + y) % kHatchPeriod == 0 on the screen, so that they run on
// across neighbouring cells.
void draw_hatched_area(ImDrawList* draw, ImVec2 a, ImVec2 b) {
  IM_ASSERT(g_hatch_rect >= 0 && "build_font_atlas() adds the hatch pattern");
  ImFontAtlas* atlas = ImGui::GetIO().Fonts;
  const ImFontAtlasCustomRect* rect = atlas->GetCustomRectByIndex(g_hatch_rect);
  const ImVec2 texel = atlas->TexUvScale;
  for (float y = a.y; y < b.y; y += kHatchPiece) {
    for (float x = a.x; x < b.x; x += kHatchPiece) {
      const ImVec2 p(x, y), q(std::min(x + kHatchPiece, b.x), std::min(y + kHatchPiece, b.y));
      const float u = static_cast<float>(rect->X) + std::fmod(p.x, float{kHatchPeriod});
      const float v = static_cast<float>(rect->Y) + std::fmod(p.y, float{kHatchPeriod});
      draw->AddImage(atlas->TexID, p, q, ImVec2(u * texel.x, v * texel.y),
                     ImVec2((u + q.x - p.x) * texel.x, (v + q.y - p.y) * texel.y));
    }
  }
}

// Every how many indices a tick label fits without overlapping its neighbour.
int64_t tick_stride(float cell, float label_extent) {
  int64_t stride = 1;
  while (cell * static_cast<float>(stride) < label_extent + 4.0f) stride *= 2;
  return stride;
}

// Black or white text, whichever reads on a cell of this colour.
ImU32 text_color_on(viz::Rgb rgb) {
  const double luminance = 0.299 * rgb.r + 0.587 * rgb.g + 0.114 * rgb.b;
  return luminance > 140.0 ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
}

}  // namespace

void build_font_atlas(ImFontAtlas& atlas) {
  g_hatch_rect = atlas.AddCustomRectRegular(kHatchSide, kHatchSide);
  unsigned char* pixels = nullptr;
  int width = 0, height = 0;
  atlas.GetTexDataAsRGBA32(&pixels, &width, &height);
  const ImFontAtlasCustomRect* rect = atlas.GetCustomRectByIndex(g_hatch_rect);
  auto* rgba = reinterpret_cast<ImU32*>(pixels);
  for (int y = 0; y < rect->Height; ++y) {
    for (int x = 0; x < rect->Width; ++x) {
      const viz::Rgb c = (x + y) % kHatchPeriod == 0 ? viz::kHatchStripe : viz::kHatchBase;
      rgba[(rect->Y + y) * width + rect->X + x] = to_imgui_color(c);
    }
  }
}

HeatmapHover draw_heatmap(const HeatmapView& view, ImVec2 size) {
  HeatmapHover hover;
  AG_CHECK(view.matrix.defined() && view.matrix.dim() == 2, "heatmap " + view.id,
           "expected a [rows, cols] matrix, got " +
               (view.matrix.defined() ? shape_str(view.matrix.shape()) : std::string("none")));
  const int64_t rows = view.matrix.size(0), cols = view.matrix.size(1);
  const std::vector<double> values = view.matrix.to_vector();
  std::vector<double> keep;
  if (view.keep.defined()) {
    AG_CHECK(view.keep.shape() == view.matrix.shape(), "heatmap " + view.id,
             "mask " + shape_str(view.keep.shape()) + " does not match the matrix " +
                 shape_str(view.matrix.shape()));
    keep = view.keep.to_vector();
  }

  AG_CHECK(
      view.row_labels.empty() || static_cast<int64_t>(view.row_labels.size()) == rows,
      "heatmap " + view.id,
      std::to_string(view.row_labels.size()) + " row labels for " + std::to_string(rows) + " rows");
  AG_CHECK(view.col_labels.empty() || static_cast<int64_t>(view.col_labels.size()) == cols,
           "heatmap " + view.id,
           std::to_string(view.col_labels.size()) + " column labels for " + std::to_string(cols) +
               " columns");
  ImGui::PushID(view.id.c_str());
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = avail.x;
  if (size.y <= 0) size.y = avail.y;

  // 1. Layout: title line, row tick column on the left, cells, column ticks
  //    and the x label below. Cells are whole pixels so that a cell's centre
  //    pixel has exactly its colour.
  const float line = ImGui::GetTextLineHeight();
  char label[32];
  // The tick label of row / column i: its label when given, else i.
  auto tick = [&](const std::vector<std::string>& labels, int64_t i) {
    if (!labels.empty()) return labels[static_cast<size_t>(i)];
    std::snprintf(label, sizeof label, "%lld", static_cast<long long>(i));
    return std::string(label);
  };
  auto widest = [&](const std::vector<std::string>& labels, int64_t count) {
    if (labels.empty()) return ImGui::CalcTextSize(tick(labels, count - 1).c_str()).x;
    float width = 0;
    for (const std::string& l : labels) width = std::max(width, ImGui::CalcTextSize(l.c_str()).x);
    return width;
  };
  const float row_tick_width = widest(view.row_labels, rows) + 6.0f;
  const float col_tick_width = widest(view.col_labels, cols);
  const float top = view.title.empty() ? 0.0f : line + 4.0f;
  const float bottom = 2.0f * line + 6.0f;
  float cell = std::min((size.x - row_tick_width) / static_cast<float>(cols),
                        (size.y - top - bottom) / static_cast<float>(rows));
  cell = std::floor(std::clamp(cell, 3.0f, view.max_cell));

  const ImVec2 cursor = ImGui::GetCursorScreenPos();
  const ImVec2 origin(std::floor(cursor.x + row_tick_width), std::floor(cursor.y + top));
  const ImVec2 grid_size(cell * static_cast<float>(cols), cell * static_cast<float>(rows));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text_color = ImGui::GetColorU32(ImGuiCol_Text);

  // 2. Title, then the cells.
  if (!view.title.empty())
    draw->AddText(ImVec2(origin.x, cursor.y), text_color, view.title.c_str());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const ImVec2 a(origin.x + cell * static_cast<float>(j),
                     origin.y + cell * static_cast<float>(i));
      const ImVec2 b(a.x + cell, a.y + cell);
      const size_t k = static_cast<size_t>(i * cols + j);
      if (!keep.empty() && keep[k] == 0.0) {
        // One area for the row's run of masked cells from here on.
        int64_t end = j + 1;
        while (end < cols && keep[static_cast<size_t>(i * cols + end)] == 0.0) ++end;
        draw_hatched_area(draw, a, ImVec2(a.x + cell * static_cast<float>(end - j), b.y));
        j = end - 1;
        continue;
      }
      const viz::Rgb rgb = view.scale(values[k]);
      draw->AddRectFilled(a, b, to_imgui_color(rgb));
      // The value sits in the lower half of the cell, so the cell's centre
      // pixel keeps exactly the colour of its value (tests sample it).
      if (view.show_values && cell >= 2.0f * line + 4.0f) {
        std::snprintf(label, sizeof label, "%.2f", values[k]);
        const ImVec2 extent = ImGui::CalcTextSize(label);
        draw->AddText(ImVec2(a.x + (cell - extent.x) / 2, a.y + cell / 2 + 2.0f),
                      text_color_on(rgb), label);
      }
    }
  }

  // 3. Tick labels (every index while they fit, else every 2nd, 4th, ...)
  //    and the axis labels.
  const int64_t row_stride = tick_stride(cell, line);
  for (int64_t i = 0; i < rows; i += row_stride) {
    const std::string text = tick(view.row_labels, i);
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    draw->AddText(
        ImVec2(origin.x - w - 4.0f, origin.y + cell * (static_cast<float>(i) + 0.5f) - line / 2),
        text_color, text.c_str());
  }
  const int64_t col_stride = tick_stride(cell, col_tick_width);
  for (int64_t j = 0; j < cols; j += col_stride) {
    const std::string text = tick(view.col_labels, j);
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    draw->AddText(ImVec2(origin.x + cell * (static_cast<float>(j) + 0.5f) - w / 2,
                         origin.y + grid_size.y + 2.0f),
                  text_color, text.c_str());
  }
  std::string axes = view.xlabel + " \xe2\x86\x92   (" + view.ylabel + " \xe2\x86\x93)";
  // Maps side by side (view.fit_axis_label): the label may run past the
  // cells into the item spacing and the next map's tick column, no further.
  const float label_room = grid_size.x + ImGui::GetStyle().ItemSpacing.x + row_tick_width;
  if (view.fit_axis_label && ImGui::CalcTextSize(axes.c_str()).x > label_room) {
    axes = view.xlabel + " \xe2\x86\x92";
  }
  draw->AddText(ImVec2(origin.x, origin.y + grid_size.y + line + 4.0f),
                ImGui::GetColorU32(ImGuiCol_TextDisabled), axes.c_str());

  // 4. One invisible button over the cells gives hover; the tooltip names the
  //    cell and its exact value.
  ImGui::SetCursorScreenPos(origin);
  ImGui::InvisibleButton("cells", grid_size);
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    hover.col = std::clamp<int64_t>(static_cast<int64_t>((mouse.x - origin.x) / cell), 0, cols - 1);
    hover.row = std::clamp<int64_t>(static_cast<int64_t>((mouse.y - origin.y) / cell), 0, rows - 1);
    const size_t k = static_cast<size_t>(hover.row * cols + hover.col);
    hover.active = true;
    hover.value = values[k];
    hover.masked = !keep.empty() && keep[k] == 0.0;
    // "query 2, key 5", or with labels "output 2 '9', source 5 '1'".
    auto name = [&](const std::string& kind, const std::vector<std::string>& labels, int64_t i) {
      std::string out = kind + " " + std::to_string(i);
      if (!labels.empty()) out += " '" + labels[static_cast<size_t>(i)] + "'";
      return out;
    };
    hover.text = name(view.row_name, view.row_labels, hover.row) + ", " +
                 name(view.col_name, view.col_labels, hover.col) + "\n" +
                 (hover.masked ? "masked: " : "");
    char text[64];
    std::snprintf(text, sizeof text, "%.6g", hover.value);
    hover.text += text;
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(hover.text.c_str());
    ImGui::EndTooltip();
    draw->AddRect(ImVec2(origin.x + cell * static_cast<float>(hover.col),
                         origin.y + cell * static_cast<float>(hover.row)),
                  ImVec2(origin.x + cell * static_cast<float>(hover.col + 1),
                         origin.y + cell * static_cast<float>(hover.row + 1)),
                  IM_COL32(255, 255, 255, 255), 0.0f, 0, 2.0f);
  }

  // 5. Leave the cursor below the whole widget and record where it went.
  ImGui::SetCursorScreenPos(cursor);
  // A title longer than the grid widens the widget, so that what follows on
  // the same line does not draw over it.
  const float title_width = view.title.empty() ? 0.0f : ImGui::CalcTextSize(view.title.c_str()).x;
  ImGui::Dummy(ImVec2(row_tick_width + std::max(grid_size.x, title_width + 8.0f),
                      top + grid_size.y + bottom));
  drawn_heatmaps().push_back({view.id, origin.x, origin.y, cell, rows, cols, view.scale});
  ImGui::PopID();
  return hover;
}

namespace {

// The colour bar's geometry: the bar, then a short tick, a gap wide enough
// that the tick does not read as a minus sign, and the labels.
constexpr float kBarWidth = 14.0f, kTickLength = 3.0f, kLabelGap = 6.0f;
constexpr int kMostTicks = 5;

// The label of tick t of n (t = 0 at the top: scale.hi).
void colorbar_label(const viz::ColorScale& scale, int t, int n, char (&label)[32]) {
  const double value = scale.hi - (scale.hi - scale.lo) * t / (n - 1);
  std::snprintf(label, sizeof label, "%.3g", std::abs(value) < 1e-12 ? 0.0 : value);
}

}  // namespace

float colorbar_width(const viz::ColorScale& scale) {
  // Every tick count draw_colorbar picks (5, 3, 2) labels a subset of the
  // five quarter points.
  char label[32];
  float label_width = 0;
  for (int t = 0; t < kMostTicks; ++t) {
    colorbar_label(scale, t, kMostTicks, label);
    label_width = std::max(label_width, ImGui::CalcTextSize(label).x);
  }
  return kBarWidth + kTickLength + kLabelGap + label_width + 2.0f;
}

void draw_colorbar(const char* id, const viz::ColorScale& scale, float height) {
  ImGui::PushID(id);
  const float line = ImGui::GetTextLineHeight();
  const ImVec2 cursor = ImGui::GetCursorScreenPos();
  const ImVec2 origin(std::floor(cursor.x), std::floor(cursor.y + line / 2));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  // High values at the top, as matplotlib draws it: 64 strips of the map.
  constexpr int kStrips = 64;
  const float strip = height / kStrips;
  for (int s = 0; s < kStrips; ++s) {
    const double t = 1.0 - (s + 0.5) / kStrips;
    const float y = origin.y + strip * static_cast<float>(s);
    draw->AddRectFilled(ImVec2(origin.x, y), ImVec2(origin.x + kBarWidth, y + strip + 1.0f),
                        to_imgui_color(viz::colormap_rgb(scale.map, t)));
  }
  // Quarters, halves or only the ends: as many labels as stand a line apart
  // (a bar beside a two-row map is too short for five).
  const float room = height / (line + 2.0f);
  const int ticks = room >= 4 ? kMostTicks : room >= 2 ? 3 : 2;
  char label[32];
  for (int t = 0; t < ticks; ++t) {
    colorbar_label(scale, t, ticks, label);
    const float y = origin.y + height * static_cast<float>(t) / static_cast<float>(ticks - 1);
    draw->AddLine(ImVec2(origin.x + kBarWidth, y), ImVec2(origin.x + kBarWidth + kTickLength, y),
                  ImGui::GetColorU32(ImGuiCol_TextDisabled));
    draw->AddText(ImVec2(origin.x + kBarWidth + kTickLength + kLabelGap, y - line / 2),
                  ImGui::GetColorU32(ImGuiCol_Text), label);
  }
  ImGui::Dummy(ImVec2(colorbar_width(scale), height + line));
  ImGui::PopID();
}

void colorbar_beside_last_map(const char* id, const viz::ColorScale& scale, float min_x) {
  const DrawnHeatmap map = drawn_heatmaps().back();
  ImGui::SameLine();
  ImGui::SetCursorPosX(std::max(ImGui::GetCursorPosX(), min_x));
  // A group, so that what follows on the line starts at the line's top; in
  // it the bar starts level with the cells (its top label half a line higher).
  ImGui::BeginGroup();
  const float drop = map.y - ImGui::GetTextLineHeight() / 2 - ImGui::GetCursorScreenPos().y -
                     ImGui::GetStyle().ItemSpacing.y;
  if (drop > 0) ImGui::Dummy(ImVec2(1, drop));
  draw_colorbar(id, scale, map.cell * static_cast<float>(map.rows));
  ImGui::EndGroup();
}

viz::ColorScale fit_scale_over(const std::vector<Tensor>& maps, viz::Colormap map) {
  std::vector<double> all;
  for (const Tensor& m : maps) {
    const std::vector<double> values = m.to_vector();
    all.insert(all.end(), values.begin(), values.end());
  }
  return viz::fit_scale(all, map);
}

viz::ColorScale gradient_scale(const std::vector<Tensor>& maps) {
  return fit_scale_over(maps, viz::Colormap::Diverging);
}

}  // namespace ag::viewer
