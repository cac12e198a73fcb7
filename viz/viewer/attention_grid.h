// A grid of attention maps, one per block (rows of the grid) and head
// (columns), with the tokens on each map's rows and columns, hatched masked
// cells, and a hover tooltip naming the query token, the key token and the
// weight. The transformer scene draws its encoder self-attention, decoder
// self-attention and cross-attention with it.
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

#include "attograd/attograd.h"

namespace ag::viewer {

struct AttentionGrid {
  std::string id;  // heatmap ids are id + "/b<block>h<head>" (in --layout)
  // [L, H, rows, cols] float64: the weights of each block and head, already
  // cut to the tokens shown.
  Tensor maps;
  Tensor keep;  // optional bool [rows, cols]: false cells are hatched (masked)
  std::vector<std::string> row_tokens, col_tokens;
  std::string row_name = "query", col_name = "key";  // names the axes and the tooltip's tokens
};

// Draws the grid at the cursor inside `size`: L rows of H maps, their cells
// as large as fits (at most 28 pixels), one colour scale (viridis, 0 to 1)
// and a colour bar on the right.
void draw_attention_grid(const AttentionGrid& grid, ImVec2 size);

}  // namespace ag::viewer
