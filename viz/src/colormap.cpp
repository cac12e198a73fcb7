// Colour maps (viridis, magma, a blue-white-red diverging map) and the colour
// scales that turn values into their colours.
#include <algorithm>
#include <cmath>
#include <span>

#include "attograd/viz.h"

namespace ag::viz {

namespace {

struct Anchor {
  double r, g, b;  // in [0, 1]
};

// Entries 0, 8, 16, ..., 248 and 255 of matplotlib's 256-entry listed maps
// (lib/matplotlib/_cm_listed.py, _viridis_data and _magma_data, by van der
// Walt and Smith). Interpolating linearly between them stays within one 8-bit
// step of matplotlib's own table.
constexpr int kListedSize = 256;
constexpr int kListedStride = 8;

constexpr Anchor kViridis[] = {
    {0.267004, 0.004874, 0.329415}, {0.277018, 0.050344, 0.375715}, {0.282327, 0.094955, 0.417331},
    {0.282884, 0.135920, 0.453427}, {0.278826, 0.175490, 0.483397}, {0.270595, 0.214069, 0.507052},
    {0.258965, 0.251537, 0.524736}, {0.244972, 0.287675, 0.537260}, {0.229739, 0.322361, 0.545706},
    {0.214298, 0.355619, 0.551184}, {0.199430, 0.387607, 0.554642}, {0.185556, 0.418570, 0.556753},
    {0.172719, 0.448791, 0.557885}, {0.160665, 0.478540, 0.558115}, {0.149039, 0.508051, 0.557250},
    {0.137770, 0.537492, 0.554906}, {0.127568, 0.566949, 0.550556}, {0.120565, 0.596422, 0.543611},
    {0.120638, 0.625828, 0.533488}, {0.132268, 0.655014, 0.519661}, {0.157851, 0.683765, 0.501686},
    {0.196571, 0.711827, 0.479221}, {0.246070, 0.738910, 0.452024}, {0.304148, 0.764704, 0.419943},
    {0.369214, 0.788888, 0.382914}, {0.440137, 0.811138, 0.340967}, {0.515992, 0.831158, 0.294279},
    {0.595839, 0.848717, 0.243329}, {0.678489, 0.863742, 0.189503}, {0.762373, 0.876424, 0.137064},
    {0.845561, 0.887322, 0.099702}, {0.926106, 0.897330, 0.104071}, {0.993248, 0.906157, 0.143936},
};

constexpr Anchor kMagma[] = {
    {0.001462, 0.000466, 0.013866}, {0.013708, 0.011771, 0.068667}, {0.039608, 0.031090, 0.133515},
    {0.074257, 0.052017, 0.202660}, {0.113094, 0.065492, 0.276784}, {0.159018, 0.068354, 0.352688},
    {0.211718, 0.061992, 0.418647}, {0.265447, 0.060237, 0.461840}, {0.316654, 0.071690, 0.485380},
    {0.366012, 0.090314, 0.497960}, {0.414709, 0.110431, 0.504662}, {0.463508, 0.129893, 0.507652},
    {0.512831, 0.148179, 0.507648}, {0.562866, 0.165368, 0.504692}, {0.613617, 0.181811, 0.498536},
    {0.664915, 0.198075, 0.488836}, {0.716387, 0.214982, 0.475290}, {0.767398, 0.233705, 0.457755},
    {0.816914, 0.255895, 0.436461}, {0.863320, 0.283729, 0.412403}, {0.904281, 0.319610, 0.388137},
    {0.937221, 0.364929, 0.368567}, {0.960949, 0.418323, 0.359630}, {0.976690, 0.476226, 0.364466},
    {0.986700, 0.535582, 0.382210}, {0.992785, 0.594891, 0.410283}, {0.996096, 0.653659, 0.446213},
    {0.997325, 0.711848, 0.488154}, {0.996898, 0.769591, 0.534892}, {0.995131, 0.827052, 0.585701},
    {0.992440, 0.884330, 0.640099}, {0.989434, 0.941470, 0.697519}, {0.987053, 0.991438, 0.749504},
};

static_assert(std::size(kViridis) == (kListedSize - 1) / kListedStride + 2);
static_assert(std::size(kMagma) == std::size(kViridis));

// ColorBrewer's 9-class RdBu, reversed so that blue is low, with its centre
// (#F7F7F7) made pure white: t = 0.5 falls exactly on it, so zero is white.
constexpr Anchor kDiverging[] = {
    {0x21 / 255.0, 0x66 / 255.0, 0xAC / 255.0},
    {0x43 / 255.0, 0x93 / 255.0, 0xC3 / 255.0},
    {0x92 / 255.0, 0xC5 / 255.0, 0xDE / 255.0},
    {0xD1 / 255.0, 0xE5 / 255.0, 0xF0 / 255.0},
    {1.0, 1.0, 1.0},
    {0xFD / 255.0, 0xDB / 255.0, 0xC7 / 255.0},
    {0xF4 / 255.0, 0xA5 / 255.0, 0x82 / 255.0},
    {0xD6 / 255.0, 0x60 / 255.0, 0x4D / 255.0},
    {0xB2 / 255.0, 0x18 / 255.0, 0x2B / 255.0},
};

uint8_t to_byte(double channel) {
  return static_cast<uint8_t>(std::lround(std::clamp(channel, 0.0, 1.0) * 255.0));
}

Rgb mix(const Anchor& a, const Anchor& b, double frac) {
  return {to_byte(a.r + (b.r - a.r) * frac), to_byte(a.g + (b.g - a.g) * frac),
          to_byte(a.b + (b.b - a.b) * frac)};
}

// t on the matplotlib table's index axis (0..255): the anchors sit at every
// 8th entry, and the last one at 255 rather than 256.
Rgb listed_rgb(std::span<const Anchor> anchors, double t) {
  const double index = t * (kListedSize - 1);
  const int segment =
      std::min(static_cast<int>(index / kListedStride), static_cast<int>(anchors.size()) - 2);
  const double start = segment * kListedStride;
  const double end = std::min(start + kListedStride, static_cast<double>(kListedSize - 1));
  return mix(anchors[segment], anchors[segment + 1], (index - start) / (end - start));
}

// Evenly spaced anchors; t = k / (n - 1) gives anchor k exactly.
Rgb even_rgb(std::span<const Anchor> anchors, double t) {
  const int count = static_cast<int>(anchors.size());
  const double x = t * (count - 1);
  const int segment = std::min(static_cast<int>(x), count - 2);
  return mix(anchors[segment], anchors[segment + 1], x - segment);
}

}  // namespace

Rgb colormap_rgb(Colormap map, double t) {
  t = std::isnan(t) ? 0.0 : std::clamp(t, 0.0, 1.0);
  switch (map) {
    case Colormap::Viridis:
      return listed_rgb(kViridis, t);
    case Colormap::Magma:
      return listed_rgb(kMagma, t);
    case Colormap::Diverging:
      return even_rgb(kDiverging, t);
  }
  throw Error("colormap_rgb: unknown colour map");
}

const char* colormap_name(Colormap map) {
  switch (map) {
    case Colormap::Viridis:
      return "viridis";
    case Colormap::Magma:
      return "magma";
    case Colormap::Diverging:
      return "diverging";
  }
  throw Error("colormap_name: unknown colour map");
}

Colormap colormap_from_name(const std::string& name) {
  for (Colormap map : {Colormap::Viridis, Colormap::Magma, Colormap::Diverging}) {
    if (name == colormap_name(map)) return map;
  }
  throw Error("colormap_from_name: unknown colour map '" + name +
              "'; expected viridis, magma or diverging");
}

double ColorScale::position(double value) const {
  // In halves when hi - lo overflows (a range as wide as [-1e308, 1e308]).
  const double t =
      std::isfinite(hi - lo) ? (value - lo) / (hi - lo) : (value / 2 - lo / 2) / (hi / 2 - lo / 2);
  return std::isnan(t) ? 0.0 : std::clamp(t, 0.0, 1.0);
}

// With no finite value at all, the scale is the map's natural one: [0, 1], or
// [-1, 1] for Diverging (as when every value is 0).
ColorScale fit_scale(const std::vector<double>& values, Colormap map) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (map == Colormap::Diverging) {
    const double m = lo > hi ? 0.0 : std::max(std::abs(lo), std::abs(hi));
    return {map, m > 0 ? -m : -1.0, m > 0 ? m : 1.0};
  }
  if (lo > hi) return {map, 0.0, 1.0};
  // +-0.5, or +-|v| 2^-40 past |v| = 2^39 (v +- 0.5 rounds back to v past 2^53).
  const double half = std::max(0.5, std::abs(lo) * 0x1p-40);
  if (lo == hi) return {map, lo - half, lo + half};
  return {map, lo, hi};
}

}  // namespace ag::viz
