// The heatmaps as an SVG (heatmap_internal.h): the Figure's coordinates as
// SVG elements, each cell a <rect> whose <title> holds its value, the text as
// <text> in DejaVu Sans at the size the layout measured it with.
#include <cmath>
#include <cstdio>

#include "heatmap_internal.h"

namespace ag::viz::detail {

namespace {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (static_cast<unsigned char>(ch) >= 0x80) {
      // Bytes that are not UTF-8 would make the whole file unreadable as XML:
      // each becomes U+FFFD, the replacement character.
      uint32_t code = 0;
      const size_t length = utf8_sequence(text, i, code);
      out += length > 0 ? text.substr(i, length) : "\xEF\xBF\xBD";
      i += length > 0 ? length - 1 : 0;
      continue;
    }
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 has no control characters but tab and newline.
        out += (static_cast<unsigned char>(ch) < 32 && ch != '\t' && ch != '\n') ? '?' : ch;
    }
  }
  return out;
}

std::string hex(Rgb rgb) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", rgb.r, rgb.g, rgb.b);
  return buffer;
}

// snprintf, not "M" + std::to_string(...): GCC 12 takes the prepend in the
// inlined concatenation for an overlapping memcpy (-Wrestrict).
std::string svg_path(const Rect& r) {
  char buffer[80];
  std::snprintf(buffer, sizeof buffer, "M%d,%dh%dv%dh%dz", r.x, r.y, r.w, r.h, -r.w);
  return buffer;
}

void svg_text(std::string& out, const Text& t) {
  const char* anchor = t.align == Align::Start    ? "start"
                       : t.align == Align::Middle ? "middle"
                                                  : "end";
  // SVG places text by its baseline: 0.35 em below the centre line puts the
  // middle of the capitals at t.y.
  const std::string x = std::to_string(t.x), y = std::to_string(t.y);
  out += "<text x=\"" + x + "\" y=\"" + y + "\" dy=\"" + format("%.1f", t.size * 0.35) +
         "\" font-size=\"" + std::to_string(t.size) + "\" text-anchor=\"" + anchor + "\"";
  if (t.vertical) out += " transform=\"rotate(-90 " + x + " " + y + ")\"";
  if (t.color != kBlack) out += " fill=\"" + hex(t.color) + "\"";
  out += '>';
  out += xml_escape(t.utf8);
  out += "</text>\n";
}

}  // namespace

std::string svg_document(const Figure& figure, const HeatmapData& data,
                         const HeatmapOptions& options, const LabelFont& font) {
  const HeatmapLayout& layout = figure.layout;
  const std::string w = std::to_string(layout.width), h = std::to_string(layout.height);
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
      w + "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h +
      "\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n";
  // The PNG's hatch: a whole number of periods per cell, stripes 3/8 of a
  // period wide; the corner pieces keep the stripes unbroken across tiles.
  const double period =
      static_cast<double>(layout.cell_size) / hatch_periods_per_cell(layout.cell_size);
  const std::string p = format("%g", period);
  out += "<defs>\n<pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"" + p +
         "\" height=\"" + p + "\">\n<path d=\"M0,0H" + p + "V" + p + "H0z\" fill=\"" +
         hex(kHatchBase) + "\"/>\n<path d=\"M-1,1L1,-1M0," + p + "L" + p + ",0M" +
         format("%g", period - 1) + "," + format("%g", period + 1) + "L" +
         format("%g", period + 1) + "," + format("%g", period - 1) + "\" stroke=\"" +
         hex(kHatchStripe) + "\" stroke-width=\"" +
         format("%.2f", period * 3 / 8 / std::sqrt(2.0)) + "\"/>\n</pattern>\n";
  // Top (offset 0) is hi, bottom is lo; 33 stops follow the maps' anchors.
  out += "<linearGradient id=\"colorbar\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
  constexpr int kStops = 33;
  for (int k = 0; k < kStops; ++k) {
    const double t = static_cast<double>(k) / (kStops - 1);
    out += "<stop offset=\"" + format("%.4f", t) + "\" stop-color=\"" +
           hex(colormap_rgb(data.scale.map, t)) + "\"/>\n";
  }
  out += "</linearGradient>\n</defs>\n";
  out += "<path d=\"" + svg_path({0, 0, layout.width, layout.height}) + "\" fill=\"#ffffff\"/>\n";

  const int c = layout.cell_size;
  std::string values;  // drawn after the cells, and transparent to the mouse
  size_t k = 0;
  for (size_t m = 0; m < layout.map_origin.size(); ++m) {
    for (int64_t i = 0; i < layout.num_queries; ++i) {
      for (int64_t j = 0; j < layout.num_keys; ++j, ++k) {
        const int x = layout.map_origin[m][0] + static_cast<int>(j) * c;
        const int y = layout.map_origin[m][1] + static_cast<int>(i) * c;
        const std::string where = "query " + std::to_string(i) + ", key " + std::to_string(j);
        out += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" +
               std::to_string(c) + "\" height=\"" + std::to_string(c) + "\" fill=\"";
        if (!data.keep[k]) {
          out += "url(#hatch)\"><title>" + where + ": masked</title></rect>\n";
          continue;
        }
        const Rgb rgb = data.scale(data.values[k]);
        out += hex(rgb) + "\"><title>" + where + ": " + format("%.6g", data.values[k]) +
               "</title></rect>\n";
        if (options.show_values) {
          const auto [cx, cy] = layout.cell_center(static_cast<int64_t>(m), i, j);
          if (auto text = value_text(font, data.values[k], rgb, cx, cy, c)) svg_text(values, *text);
        }
      }
    }
  }
  if (!values.empty()) out += "<g pointer-events=\"none\">\n" + values + "</g>\n";
  const auto [bx, by, bw, bh] = layout.colorbar;
  out += "<path d=\"" + svg_path({bx, by, bw, bh}) + "\" fill=\"url(#colorbar)\"/>\n";
  out += "<path fill=\"#000000\" d=\"";
  for (const Rect& mark : figure.marks) out += svg_path(mark);
  out += "\"/>\n";
  for (const Text& text : figure.texts) svg_text(out, text);
  out += "</svg>\n";
  return out;
}

}  // namespace ag::viz::detail
