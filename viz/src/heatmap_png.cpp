// The heatmaps as a PNG (heatmap_internal.h): the Figure's cells, hatching,
// colour bar and marks as pixels, its text blended in from the label font's
// coverage masks, encoded with stb_image_write.
#include <stb_image_write.h>

#include "heatmap_internal.h"

namespace ag::viz::detail {

namespace {

class Canvas {
 public:
  Canvas(int width, int height)
      : image_{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, 255)} {}

  // The colour over what is there, by `alpha` of 255 (the font's coverage).
  void blend(int x, int y, Rgb rgb, int alpha = 255) {
    if (x < 0 || y < 0 || x >= image_.width || y >= image_.height || alpha == 0) return;
    uint8_t* p = &image_.rgb[(static_cast<size_t>(y) * image_.width + x) * 3];
    const auto mix = [alpha](uint8_t under, uint8_t over) {
      return static_cast<uint8_t>((under * (255 - alpha) + over * alpha + 127) / 255);
    };
    p[0] = mix(p[0], rgb.r);
    p[1] = mix(p[1], rgb.g);
    p[2] = mix(p[2], rgb.b);
  }
  void fill(const Rect& r, Rgb rgb) {
    for (int y = r.y; y < r.y + r.h; ++y) {
      for (int x = r.x; x < r.x + r.w; ++x) blend(x, y, rgb);
    }
  }
  // Stripes at phase 0 on the cell's centre pixel, which stays kHatchBase.
  // With k periods per cell, a pixel's phase is ((dx + dy) * k mod cell) / cell.
  void hatch(const Rect& r, int cx, int cy) {
    const int k = hatch_periods_per_cell(r.w);
    for (int y = r.y; y < r.y + r.h; ++y) {
      for (int x = r.x; x < r.x + r.w; ++x) {
        const int phase = (((x - cx) + (y - cy)) * k % r.w + r.w) % r.w;
        blend(x, y, phase * 8 >= 5 * r.w ? kHatchStripe : kHatchBase);
      }
    }
  }
  // Mask pixel (u, v), u along the text from the pen's start, lands at
  // (x0 + u, y0 + v), or turned a quarter for vertical text, which runs up
  // the image from t.y + advance / 2.
  void text(const Text& t, const LabelFont& font) {
    const TextMask mask = font.render(t.utf8, t.size);
    const int len = mask.advance;
    const int start = t.align == Align::Start ? 0 : t.align == Align::Middle ? len / 2 : len;
    for (int v = 0; v < mask.height; ++v) {
      for (int c = 0; c < mask.width; ++c) {
        const int alpha = mask.coverage[static_cast<size_t>(v) * mask.width + c];
        const int u = c - mask.left;
        if (t.vertical) {
          blend(t.x - mask.middle + v, t.y + len / 2 - 1 - u, t.color, alpha);
        } else {
          blend(t.x - start + u, t.y - mask.middle + v, t.color, alpha);
        }
      }
    }
  }
  const Image& image() const { return image_; }

 private:
  Image image_;
};

}  // namespace

Image raster_png(const Figure& figure, const HeatmapData& data, const HeatmapOptions& options,
                 const LabelFont& font) {
  const HeatmapLayout& layout = figure.layout;
  Canvas canvas(layout.width, layout.height);
  const int c = layout.cell_size;
  size_t k = 0;  // row-major over maps, queries, keys
  for (size_t m = 0; m < layout.map_origin.size(); ++m) {
    for (int64_t i = 0; i < layout.num_queries; ++i) {
      for (int64_t j = 0; j < layout.num_keys; ++j, ++k) {
        const auto [cx, cy] = layout.cell_center(static_cast<int64_t>(m), i, j);
        const Rect cell{layout.map_origin[m][0] + static_cast<int>(j) * c,
                        layout.map_origin[m][1] + static_cast<int>(i) * c, c, c};
        if (!data.keep[k]) {
          canvas.hatch(cell, cx, cy);
          continue;
        }
        const Rgb rgb = data.scale(data.values[k]);
        canvas.fill(cell, rgb);
        if (options.show_values) {
          if (auto text = value_text(font, data.values[k], rgb, cx, cy, c)) {
            canvas.text(*text, font);
          }
        }
      }
    }
  }
  const auto [bx, by, bw, bh] = layout.colorbar;
  for (int y = 0; y < bh; ++y) {
    const double t = bh > 1 ? 1.0 - static_cast<double>(y) / (bh - 1) : 1.0;
    canvas.fill({bx, by + y, bw, 1}, colormap_rgb(data.scale.map, t));
  }
  for (const Rect& mark : figure.marks) canvas.fill(mark, kBlack);
  for (const Text& text : figure.texts) canvas.text(text, font);
  return canvas.image();
}

std::vector<uint8_t> encode_png(const Image& image) {
  std::vector<uint8_t> bytes;
  const auto append = [](void* context, void* data, int size) {
    auto* out = static_cast<std::vector<uint8_t>*>(context);
    out->insert(out->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
  };
  const int ok = stbi_write_png_to_func(append, &bytes, image.width, image.height, 3,
                                        image.rgb.data(), image.width * 3);
  AG_CHECK(ok != 0, kOp,
           "cannot encode a " + std::to_string(image.width) + "x" + std::to_string(image.height) +
               " PNG");
  return bytes;
}

}  // namespace ag::viz::detail
