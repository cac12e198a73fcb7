// The heatmaps' label font (LabelFont, heatmap_internal.h): DejaVu Sans, the
// viewer's font, anti-aliased through stb_truetype, so that phoneme labels
// (AY, NG, ZH) read as they do on screen; stb_easy_font's bitmap font when
// the font file is missing, so that a machine without fonts still gets labels.
//
// stb_truetype is compiled here and nowhere else, and static: Debian's libstb,
// which the viewer links for ImGui, exports the same function names.
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include <stb_easy_font.h>
#include <stb_truetype.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "heatmap_internal.h"

namespace ag::viz::detail {

size_t utf8_sequence(const std::string& text, size_t i, uint32_t& code) {
  const auto byte = [&](size_t k) {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u;
  };
  const unsigned lead = byte(0);
  const size_t length = lead < 0x80                    ? 1
                        : lead >= 0xC2 && lead <= 0xDF ? 2
                        : lead >= 0xE0 && lead <= 0xEF ? 3
                        : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                       : 0;
  code = length == 1 ? lead : lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    code = code << 6 | (byte(k) & 0x3F);
  }
  const bool shortest = length < 3 || (length == 3 ? code >= 0x800 : code >= 0x10000);
  const bool allowed =
      (code < 0xD800 || code > 0xDFFF) && code != 0xFFFE && code != 0xFFFF && code <= 0x10FFFF;
  return length > 0 && shortest && allowed ? length : 0;
}

namespace {

// ---- the bitmap fallback: stb_easy_font --------------------------------------------

// 7-pixel capitals; g, p, q, y and Q reach 2 pixels below. Drawn at the
// integer scale whose capitals are about as tall as DejaVu's at `size`.
constexpr int kBitmapCapHeight = 7;
constexpr int kBitmapDescent = 2;

int bitmap_scale(int size) {
  return std::max(1, size / (kBitmapCapHeight + kBitmapDescent));
}

// stb_easy_font has glyphs for printable ASCII only (and indexes its table
// with the raw byte): everything else becomes '?'.
std::string printable(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c < 32 || c > 126) c = '?';
  }
  return out;
}

int bitmap_width(const std::string& ascii, int scale) {
  return stb_easy_font_width(const_cast<char*>(ascii.c_str())) * scale;
}

// stb_easy_font turns text into axis-aligned quads of 1-pixel strokes at
// (0, 0); each is scaled and filled in.
TextMask bitmap_render(const std::string& text, int size) {
  const std::string ascii = printable(text);
  const int s = bitmap_scale(size);
  std::vector<char> quads(ascii.size() * 1024);  // stb needs ~270 bytes a glyph
  const int count = stb_easy_font_print(0, 0, const_cast<char*>(ascii.c_str()), nullptr,
                                        quads.data(), static_cast<int>(quads.size()));
  struct Box {
    int x0, y0, x1, y1;
  };
  std::vector<Box> boxes;
  TextMask mask;
  mask.advance = bitmap_width(ascii, s);
  mask.width = mask.advance;
  mask.height = (kBitmapCapHeight + kBitmapDescent) * s;
  mask.middle = kBitmapCapHeight * s / 2;
  for (int q = 0; q < count; ++q) {
    // A quad is 4 vertices of 16 bytes (x, y, z floats, 4 colour bytes);
    // vertex 0 is its top-left corner, vertex 2 its bottom-right one.
    float corner[2][2];
    std::memcpy(corner[0], &quads[q * 64], sizeof corner[0]);
    std::memcpy(corner[1], &quads[q * 64 + 32], sizeof corner[1]);
    const Box box{static_cast<int>(corner[0][0]) * s, static_cast<int>(corner[0][1]) * s,
                  static_cast<int>(corner[1][0]) * s, static_cast<int>(corner[1][1]) * s};
    mask.width = std::max(mask.width, box.x1);
    mask.height = std::max(mask.height, box.y1);
    boxes.push_back(box);
  }
  mask.coverage.assign(static_cast<size_t>(mask.width) * mask.height, 0);
  for (const Box& box : boxes) {
    for (int y = box.y0; y < box.y1; ++y) {
      std::fill_n(&mask.coverage[static_cast<size_t>(y) * mask.width + box.x0], box.x1 - box.x0,
                  255);
    }
  }
  return mask;
}

}  // namespace

// ---- DejaVu through stb_truetype ------------------------------------------------------

struct LabelFont::TrueType {
  std::vector<unsigned char> file;
  stbtt_fontinfo info{};

  struct Glyph {
    int index;
    float x;  // pen position, in pixels from the line's start
  };

  float scale(int size) const { return stbtt_ScaleForMappingEmToPixels(&info, size); }

  // The glyphs of a line, kerned, and the pen's position after the last one.
  std::vector<Glyph> place(const std::string& utf8, float scale, float& pen) const {
    std::vector<Glyph> glyphs;
    pen = 0.0f;
    int previous = 0;
    for (size_t i = 0; i < utf8.size();) {
      uint32_t code = 0;
      const size_t length = utf8_sequence(utf8, i, code);
      // As the SVG writes them: control characters '?', bytes that are not
      // UTF-8 the replacement character.
      if (length == 0) code = 0xFFFD;
      if (code < 32 || code == 127) code = '?';
      i += std::max<size_t>(length, 1);
      const int index = stbtt_FindGlyphIndex(&info, static_cast<int>(code));
      if (previous != 0) pen += scale * stbtt_GetGlyphKernAdvance(&info, previous, index);
      glyphs.push_back({index, pen});
      int advance = 0, bearing = 0;
      stbtt_GetGlyphHMetrics(&info, index, &advance, &bearing);
      pen += scale * advance;
      previous = index;
    }
    return glyphs;
  }
};

LabelFont::LabelFont(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  auto truetype = std::make_unique<TrueType>();
  truetype->file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const int offset = stbtt_GetFontOffsetForIndex(truetype->file.data(), 0);
  if (offset < 0 || stbtt_InitFont(&truetype->info, truetype->file.data(), offset) == 0) return;
  truetype_ = std::move(truetype);
}

LabelFont::~LabelFont() = default;

int LabelFont::width(const std::string& utf8, int size) const {
  if (!truetype_) return bitmap_width(printable(utf8), bitmap_scale(size));
  float pen = 0.0f;
  truetype_->place(utf8, truetype_->scale(size), pen);
  return static_cast<int>(std::ceil(pen));
}

int LabelFont::cap_height(int size) const {
  if (!truetype_) return kBitmapCapHeight * bitmap_scale(size);
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  stbtt_GetCodepointBox(&truetype_->info, 'H', &x0, &y0, &x1, &y1);
  return static_cast<int>(std::lround(y1 * truetype_->scale(size)));
}

int LabelFont::descent(int size) const {
  if (!truetype_) return kBitmapDescent * bitmap_scale(size);
  int lowest = 0;
  for (char c : std::string("gjpqyQ")) {
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    stbtt_GetCodepointBox(&truetype_->info, c, &x0, &y0, &x1, &y1);
    lowest = std::min(lowest, y0);
  }
  return static_cast<int>(std::ceil(-lowest * truetype_->scale(size)));
}

TextMask LabelFont::render(const std::string& utf8, int size) const {
  if (!truetype_) return bitmap_render(utf8, size);
  const stbtt_fontinfo& info = truetype_->info;
  const float scale = truetype_->scale(size);
  float pen = 0.0f;
  const std::vector<TrueType::Glyph> glyphs = truetype_->place(utf8, scale, pen);
  // Each glyph's pixel box, from its pen position's whole pixel and the
  // baseline; the mask holds them all, the advance and the capitals.
  struct Box {
    int x0, y0, x1, y1;
  };
  std::vector<Box> boxes;
  const int cap = cap_height(size);
  int min_x = 0, min_y = -cap, max_x = static_cast<int>(std::ceil(pen)), max_y = 0;
  for (const TrueType::Glyph& g : glyphs) {
    const float origin = std::floor(g.x);
    Box b{};
    stbtt_GetGlyphBitmapBoxSubpixel(&info, g.index, scale, scale, g.x - origin, 0.0f, &b.x0, &b.y0,
                                    &b.x1, &b.y1);
    b.x0 += static_cast<int>(origin);
    b.x1 += static_cast<int>(origin);
    min_x = std::min(min_x, b.x0);
    min_y = std::min(min_y, b.y0);
    max_x = std::max(max_x, b.x1);
    max_y = std::max(max_y, b.y1);
    boxes.push_back(b);
  }
  TextMask mask;
  mask.width = max_x - min_x;
  mask.height = max_y - min_y;
  mask.left = -min_x;
  mask.middle = -min_y - cap / 2;
  mask.advance = static_cast<int>(std::ceil(pen));
  mask.coverage.assign(static_cast<size_t>(mask.width) * mask.height, 0);
  std::vector<unsigned char> bitmap;
  for (size_t k = 0; k < glyphs.size(); ++k) {
    const Box& b = boxes[k];
    const int w = b.x1 - b.x0, h = b.y1 - b.y0;
    if (w <= 0 || h <= 0) continue;  // a space
    bitmap.assign(static_cast<size_t>(w) * h, 0);
    const float origin = std::floor(glyphs[k].x);
    stbtt_MakeGlyphBitmapSubpixel(&info, bitmap.data(), w, h, w, scale, scale, glyphs[k].x - origin,
                                  0.0f, glyphs[k].index);
    // Neighbours may share an edge pixel (kerned pairs such as AY): the
    // darker of the two, not their sum, so that no seam turns bold.
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        uint8_t& out =
            mask.coverage[static_cast<size_t>(b.y0 - min_y + y) * mask.width + (b.x0 - min_x + x)];
        out = std::max(out, bitmap[static_cast<size_t>(y) * w + x]);
      }
    }
  }
  return mask;
}

}  // namespace ag::viz::detail
