// attograd-viewer: additive and dot-product attention side by side, live.
// The viewer is the library call run_viewer (viewer_app.cpp), so that a
// program that registers its own scoring function can open it too.
#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#endif

#include "attograd/viewer.h"

int main(int argc, char** argv) {
  const int code = ag::viewer::run_viewer(argc, argv);
#ifdef __EMSCRIPTEN__
  // The page stays after main returns: tell it the viewer stopped early.
  if (code != 0) EM_ASM({ attograd.finished($0); }, code);
#endif
  return code;
}
