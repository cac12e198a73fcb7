// Parsing the viewer's command line (see options.h).
#include "options.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "attograd/error.h"

namespace ag::viewer {
namespace {

int parse_int(const std::string& flag, const std::string& text, int low, int high) {
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  AG_CHECK(used == text.size() && value >= low && value <= high, "attograd-viewer",
           flag + " takes a whole number from " + std::to_string(low) + " to " +
               std::to_string(high) + ", got '" + text + "'");
  return value;
}

}  // namespace

const char* usage() {
  return "usage: attograd-viewer [--scene NAME] [--set SCENE.KNOB=VALUE]... [--frames N]\n"
         "                       [--screenshot FILE.png] [--size WxH] [--list-scenes]\n"
         "                       [--list-knobs] [--stats] [--layout FILE]\n"
         "                       [--dump-inputs FILE.npz] [--open FILE.npy|FILE.npz]\n"
         "  --scene NAME        the tab to open (see --list-scenes); default compare, or\n"
         "                      the scene of the first --set\n"
         "  --set S.K=V[,...]   set knob K of scene S to V before the first frame, e.g.\n"
         "                      --set masks.mode=causal (repeatable; see --list-knobs)\n"
         "  --list-knobs        list every scene's knobs and the values they take\n"
         "  --frames N          render N frames, then exit\n"
         "  --screenshot FILE   write the last frame as PNG (with --frames)\n"
         "  --size WxH          window size, default 1600x1000\n"
         "  --stats             print frame time and memory figures at exit\n"
         "  --layout FILE       where each heatmap's cells were drawn in the last frame\n"
         "  --dump-inputs FILE  save the scene's input tensors (.npz) at exit\n"
         "  --open FILE         open a .npy/.npz in the file scene\n"
         "keys: 1-9 switch scenes, F1 shows the keys, Esc quits\n";
}

ViewerOptions parse_options(const std::vector<std::string>& args) {
  ViewerOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    auto value = [&]() -> const std::string& {
      AG_CHECK(i + 1 < args.size(), "attograd-viewer", flag + " needs a value");
      return args[++i];
    };
    if (flag == "--scene") {
      options.scene = value();
      options.scene_chosen = true;
    } else if (flag == "--set") {
      // Comma-separated settings (the page's ?set=a.b=c,d.e=f) or one. A
      // part without '=' continues the setting before it: a list knob's
      // value (pronounce.models=a.npz,b.npz).
      const std::string& settings = value();
      size_t start = 0;
      const size_t first = options.settings.size();
      while (start <= settings.size()) {
        const size_t comma = std::min(settings.find(',', start), settings.size());
        const std::string setting = settings.substr(start, comma - start);
        start = comma + 1;
        if (!setting.empty() && setting.find('=') == std::string::npos &&
            options.settings.size() > first) {
          options.settings.back() += "," + setting;
          continue;
        }
        AG_CHECK(setting.find('.') < setting.find('=') && setting.find('=') != std::string::npos,
                 "attograd-viewer",
                 "--set takes SCENE.KNOB=VALUE (e.g. masks.mode=causal), got '" + setting + "'");
        options.settings.push_back(setting);
      }
    } else if (flag == "--list-knobs") {
      options.list_knobs = true;
    } else if (flag == "--frames") {
      options.frames = parse_int(flag, value(), 1, 10'000'000);
    } else if (flag == "--screenshot") {
      options.screenshot = value();
    } else if (flag == "--size") {
      const std::string& size = value();
      const size_t x = size.find('x');
      AG_CHECK(x != std::string::npos, "attograd-viewer",
               "--size takes WxH, e.g. 1600x1000, got '" + size + "'");
      options.width = parse_int(flag, size.substr(0, x), 320, 16384);
      options.height = parse_int(flag, size.substr(x + 1), 240, 16384);
    } else if (flag == "--list-scenes") {
      options.list_scenes = true;
    } else if (flag == "--stats") {
      options.stats = true;
    } else if (flag == "--layout") {
      options.layout = value();
    } else if (flag == "--dump-inputs") {
      options.dump_inputs = value();
    } else if (flag == "--open") {
      options.open = value();
      options.scene = "file";
      options.scene_chosen = true;
    } else if (flag == "--help" || flag == "-h") {
      options.help = true;
    } else {
      AG_CHECK(false, "attograd-viewer", "unknown argument '" + flag + "'");
    }
  }
  AG_CHECK(options.screenshot.empty() || options.frames > 0, "attograd-viewer",
           "--screenshot needs --frames N (the screenshot is of the last frame)");
  return options;
}

}  // namespace ag::viewer
