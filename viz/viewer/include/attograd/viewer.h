// The viewer as a library call (CMake target attograd::viewer): a program
// opens the same window attograd-viewer opens, with its own command line.
//
//   ag::nn::register_scoring_function({"cosine", "...", make_cosine});
//   return ag::viewer::run_viewer({"--set", "compare.scoring=additive,cosine"});
//
// The scenes read nn's table of scoring functions when they are made, so a
// function the program registered before the call is in every scene's
// scoring combos and takes the --set SCENE.scoring knobs like the library's.
#pragma once

#include <string>
#include <vector>

namespace ag::viewer {

// attograd-viewer's main: argv as its command line (--help lists it;
// argv[0] is the program's name), the window open until it is closed or
// --frames have been drawn. Returns the exit code (2: a bad argument, 3: no
// display).
int run_viewer(int argc, char** argv);
// The same with the arguments after the program's name, as a list.
int run_viewer(const std::vector<std::string>& arguments);

}  // namespace ag::viewer
