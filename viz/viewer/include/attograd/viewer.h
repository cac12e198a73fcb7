// The viewer as a library call (CMake target attograd::viewer): a program
// opens the same window attograd-viewer opens, with its own command line.
//
//   ag::nn::register_scoring_function({"cosine", "...", make_cosine});
//   const char* args[] = {"my-program", "--set", "compare.scoring=additive,cosine"};
//   return ag::viewer::run_viewer(3, const_cast<char**>(args));
//
// The scenes read nn's table of scoring functions when they are made, so a
// function the program registered before the call is in every scene's
// scoring combos and takes the --set SCENE.scoring knobs like the library's.
#pragma once

namespace ag::viewer {

// attograd-viewer's main: argv as its command line (--help lists it;
// argv[0] is the program's name), the window open until it is closed or
// --frames have been drawn. Returns the exit code (2: a bad argument, 3: no
// display).
int run_viewer(int argc, char** argv);

}  // namespace ag::viewer
