// What the files of show_heatmaps() share. One Figure (where every map,
// cell, label, tick and the colour bar go) is computed from the shape, the
// options and the label font's metrics alone, then drawn twice over:
//   heatmap.cpp           the Figure's layout, the data, the public functions
//   heatmap_colorbar.cpp  the colour bar: its place, ticks and labels
//   heatmap_font.cpp      the label font: DejaVu through stb_truetype, or
//                         stb_easy_font's bitmap font when the file is missing
//   heatmap_png.cpp       the PNG: pixels, text blended from the font's masks
//   heatmap_svg.cpp       the SVG: the same coordinates as SVG elements
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attograd/viz.h"

namespace ag::viz::detail {

inline constexpr const char* kOp = "show_heatmaps";

// Labels are 18 pixels to the em (the SVG's font-size): DejaVu's capitals are
// then 13 pixels tall, about stb_easy_font's at 2x, which stays readable next
// to 24-pixel cells. Values inside small cells drop to half that.
inline constexpr int kLabelSize = 18;
inline constexpr int kSmallLabelSize = kLabelSize / 2;

inline constexpr int kTickLength = 4;    // tick marks stick out of the frame this far
inline constexpr int kTickLabelGap = 3;  // between a tick mark and its label

inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kBlack{0, 0, 0};

// Hatch stripes run diagonally ("/"), about kHatchPeriod pixels apart and
// 3/8 of that wide: a cell holds a whole number of periods, so that stripes
// continue from one masked cell into the next.
inline constexpr int kHatchPeriod = 8;
int hatch_periods_per_cell(int cell);

std::string format(const char* spec, double value);

// The length of the well-formed UTF-8 sequence at text[i] that XML 1.0 allows
// (no surrogates, overlong forms, U+FFFE/U+FFFF or code points past
// U+10FFFF), its code point in `code`; 0 when there is none there.
size_t utf8_sequence(const std::string& text, size_t i, uint32_t& code);

// ---- the label font ----------------------------------------------------------

// One line of text as 8-bit coverage, 0 (paper) to 255 (ink), row-major.
struct TextMask {
  int width = 0, height = 0;
  int left = 0;     // the column where the pen starts (a glyph may reach left of it)
  int middle = 0;   // the row of the capitals' middle, where a label is centred
  int advance = 0;  // how far the pen moves: LabelFont::width()
  std::vector<uint8_t> coverage;
};

// Measures and renders labels. `size` is pixels to the em (the SVG's
// font-size); the bitmap fallback draws at size / 9 times its 7-pixel capitals.
class LabelFont {
 public:
  // Reads the TrueType font at `path`; when it cannot be read or parsed, the
  // labels fall back to stb_easy_font (printable ASCII only, 1-bit strokes).
  explicit LabelFont(const std::string& path);
  ~LabelFont();
  LabelFont(const LabelFont&) = delete;
  LabelFont& operator=(const LabelFont&) = delete;

  int width(const std::string& utf8, int size) const;
  int cap_height(int size) const;
  int descent(int size) const;  // how far g, p, q, y and Q reach below the baseline
  TextMask render(const std::string& utf8, int size) const;

 private:
  struct TrueType;
  std::unique_ptr<TrueType> truetype_;  // null: the bitmap fallback
};

// ---- the figure -------------------------------------------------------------------

enum class Align { Start, Middle, End };

// One label. (x, y) is its anchor: the text's left end, middle or right end
// (per align) at height y, vertically centred there. Vertical text reads
// bottom to top and is centred on (x, y).
struct Text {
  std::string utf8;
  int x = 0, y = 0;
  Align align = Align::Middle;
  int size = kLabelSize;
  bool vertical = false;
  Rgb color = kBlack;
};

struct Rect {
  int x, y, w, h;
};

struct Figure {
  HeatmapLayout layout;
  std::vector<Text> texts;           // titles, axis labels, tick labels
  std::vector<Rect> marks;           // frames and tick marks, drawn black
  std::vector<int> colorbar_tick_y;  // from the bottom (lo) to the top (hi)
};

// Adds the frame around the rectangle (x, y, w, h), one pixel outside it.
void add_frame(std::vector<Rect>& marks, int x, int y, int w, int h);

// ---- the colour bar -----------------------------------------------------------------

// Everything from the colour bar's left edge to the right end of its labels.
int colorbar_band_width(const LabelFont& font);
// Sets layout.colorbar at (x, y), h tall, and adds its frame and tick marks.
void add_colorbar(Figure& figure, int x, int y, int h);
// The colour bar's labels, lo at the bottom tick to hi at the top one.
void add_colorbar_labels(Figure& figure, const ColorScale& scale);

// ---- the data and the writers -------------------------------------------------------

// The values, the keep flags (all true without a mask) and the colour scale.
struct HeatmapData {
  std::vector<double> values;
  std::vector<bool> keep;
  ColorScale scale;
};

// The value printed inside a cell: full size when it fits, else half, else nothing.
std::optional<Text> value_text(const LabelFont& font, double value, Rgb background, int cx, int cy,
                               int cell);

Image raster_png(const Figure& figure, const HeatmapData& data, const HeatmapOptions& options,
                 const LabelFont& font);
std::vector<uint8_t> encode_png(const Image& image);
std::string svg_document(const Figure& figure, const HeatmapData& data,
                         const HeatmapOptions& options, const LabelFont& font);

}  // namespace ag::viz::detail
