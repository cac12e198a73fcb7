// The viewer's command line. Tests and outside checks rely on it:
//
//   attograd-viewer [--scene NAME] [--frames N] [--screenshot FILE.png]
//                   [--size WxH] [--list-scenes] [--stats]
//                   [--layout FILE] [--dump-inputs FILE.npz] [--open FILE]
#pragma once

#include <string>
#include <vector>

namespace ag::viewer {

struct ViewerOptions {
  std::string scene = "compare";
  int frames = 0;          // > 0: render this many frames, then exit
  std::string screenshot;  // PNG of the last frame (needs --frames)
  int width = 1600, height = 1000;
  bool list_scenes = false;
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
