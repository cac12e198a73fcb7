// The viewer's command line. Tests and outside checks rely on it:
//
//   attograd-viewer [--scene NAME] [--set SCENE.KNOB=VALUE]... [--frames N]
//                   [--screenshot FILE.png] [--size WxH] [--list-scenes]
//                   [--list-knobs] [--stats] [--layout FILE]
//                   [--dump-inputs FILE.npz] [--open FILE]
#pragma once

#include <string>
#include <vector>

namespace ag::viewer {

struct ViewerOptions {
  std::string scene = "compare";
  bool scene_chosen = false;  // by --scene or --open (else --set's first scene opens)
  // "SCENE.KNOB=VALUE" settings, in order (--set, repeatable, or comma-separated)
  std::vector<std::string> settings;
  int frames = 0;          // > 0: render this many frames, then exit
  std::string screenshot;  // PNG of the last frame (needs --frames)
  int width = 1600, height = 1000;
  bool list_scenes = false;
  bool list_knobs = false;
  bool stats = false;       // print frame time and memory figures at exit
  std::string layout;       // where each heatmap's cells were drawn in the last frame
  std::string dump_inputs;  // the scene's input tensors at exit (.npz)
  std::string open;         // a .npy/.npz for the file scene
  bool help = false;
};

// Parses argv[1..]; throws ag::Error naming the bad argument.
ViewerOptions parse_options(const std::vector<std::string>& args);
// The usage text for --help and errors.
const char* usage();

}  // namespace ag::viewer
