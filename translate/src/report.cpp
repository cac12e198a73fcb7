// Text, JSON and heatmap views of a translation (report.h).
#include "attograd/translate/report.h"

#include <algorithm>
#include <cstdio>

#include "attograd/viz.h"

namespace ag::translate {

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

namespace {

std::string json_strings(const std::vector<std::string>& strings) {
  std::string out = "[";
  for (size_t i = 0; i < strings.size(); ++i) {
    if (i > 0) out += ',';
    out += json_quote(strings[i]);
  }
  return out + "]";
}

}  // namespace

std::string translation_json(const Translation& t) {
  const std::vector<double> w = t.alignment.to_vector();
  const int64_t rows = t.alignment.size(0), cols = t.alignment.size(1);
  std::string weights = "[";
  for (int64_t r = 0; r < rows; ++r) {
    weights += r ? ",[" : "[";
    for (int64_t c = 0; c < cols; ++c) {
      char number[32];
      std::snprintf(number, sizeof number, "%.6g", w[static_cast<size_t>(r * cols + c)]);
      if (c > 0) weights += ',';
      weights += number;
    }
    weights += "]";
  }
  weights += "]";
  std::string out = "{\"input\":";
  out += json_quote(t.input);
  out += ",\"output\":";
  out += json_quote(t.output);
  out += ",\"source_tokens\":";
  out += json_strings(t.source_tokens);
  out += ",\"output_tokens\":";
  out += json_strings(t.output_tokens);
  out += ",\"weights\":";
  out += weights;
  return out + "}";
}

std::string alignment_table(const Translation& t) {
  const std::vector<double> w = t.alignment.to_vector();
  const int64_t rows = t.alignment.size(0), cols = t.alignment.size(1);
  size_t row_label = 0, cell = 4;  // "0.00"
  for (const auto& token : t.output_tokens) row_label = std::max(row_label, token.size());
  for (const auto& token : t.source_tokens) cell = std::max(cell, token.size());
  std::string out;
  // Appends `s` right-aligned in `width` columns.
  const auto put = [&out](const std::string& s, size_t width) {
    out.append(width > s.size() ? width - s.size() : 0, ' ');
    out += s;
  };
  put("", row_label);
  for (const auto& token : t.source_tokens) put(token, cell + 1);
  out += "\n";
  for (int64_t r = 0; r < rows; ++r) {
    put(t.output_tokens[static_cast<size_t>(r)], row_label);
    for (int64_t c = 0; c < cols; ++c) {
      char number[32];
      std::snprintf(number, sizeof number, "%.2f", w[static_cast<size_t>(r * cols + c)]);
      put(number, cell + 1);
    }
    out += "\n";
  }
  return out;
}

void alignment_heatmap(const Translation& t, const std::string& path) {
  AG_CHECK(t.alignment.defined() && t.alignment.size(0) > 0, "alignment_heatmap",
           "\"" + t.input + "\" has no output step to draw");
  viz::HeatmapOptions options;
  options.xlabel = "Source";
  options.ylabel = "Output";
  options.xticklabels = t.source_tokens;
  options.yticklabels = t.output_tokens;
  options.vmin = 0.0;
  options.vmax = 1.0;
  viz::show_heatmaps(t.alignment, path, options);
}

}  // namespace ag::translate
