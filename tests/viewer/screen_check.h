// Pixel tests of the real viewer: run attograd-viewer on a scene under the
// X display the test runs in (ctest wraps these programs in xvfb-run), then
// compare what it drew with what the library computes.
//
//   SceneRun run = run_scene("compare");
//   Tensor w = ...;  // recomputed from run.inputs with the library itself
//   EXPECT_TRUE(cells_match(run, "compare/additive", w));
//
// The viewer reports where each heatmap's cells landed (--layout) and the
// tensors it fed the library (--dump-inputs); the colours come from the
// screenshot (--screenshot), so a wrong number, a wrong colour map or a map
// drawn in the wrong place all fail.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "attograd/attograd.h"
#include "attograd/viz.h"

namespace ag::viewer_test {

// The programs under test. CMake gives their paths to screen_check.cpp alone,
// so that the test programs compile to the same bytes in every checkout and
// build tree, and ccache serves them from another clone's builds.
const std::string& viewer_path();
const std::string& translate_program();
// Tutorial 18's program, whose --viewer opens the viewer with its own scoring
// function; empty when the tutorials are not built.
const std::string& tutorial_18_program();
// Exercise 11's grader built on `variant` ("solution", "wrong"), whose
// --viewer opens the compare scene with the exercise's class beside general;
// empty when the tutorials are not built.
std::string exercise_11_program(const std::string& variant);

// One heatmap of the last frame, in screenshot pixels.
struct LayoutEntry {
  std::string id;
  double x = 0, y = 0, cell = 0;  // top-left of cell (0, 0); side of a cell
  int64_t rows = 0, cols = 0;
  viz::ColorScale scale;
};

struct SceneRun {
  viz::Image screenshot;
  std::vector<LayoutEntry> layout;
  std::map<std::string, Tensor> inputs;
  std::string output;  // what the viewer printed (stdout and stderr)
  int exit_code = -1;
  std::string command;  // how the viewer was run
  std::string dir;      // where its files went
};

// Runs the viewer for `frames` frames on `scene` ("": no --scene, the viewer
// chooses) plus `extra` arguments (the browser runner passes them as URL
// parameters: --set a.b=c becomes ?set=a.b=c), and
// collects its screenshot, layout, inputs and output. Fails the test (and
// returns what it has) when the viewer exits non-zero.
SceneRun run_scene(const std::string& scene, int frames = 4,
                   const std::vector<std::string>& extra = {});

// run_scene for a viewer that also writes files of its own (e.g. a scene's
// saved models): in `extra`, "{out}" stands for the folder they go to, and
// `written` names them. After the run they are in run.dir (the page writes
// them into its in-memory file system, and the browser runner copies them
// out).
SceneRun run_scene_writing(const std::string& scene, int frames,
                           const std::vector<std::string>& extra,
                           const std::vector<std::string>& written);

// run_scene for another program that opens the viewer through run_viewer
// (attograd::viewer): `program` with the same arguments. The browser runner
// has only the viewer's page: there it runs the page.
SceneRun run_program_scene(const std::string& program, const std::string& scene, int frames,
                           const std::vector<std::string>& extra);

// Runs the viewer as run_scene does, but only collects its exit code and
// output, and fails nothing: for runs that are meant to fail.
SceneRun run_viewer(const std::string& scene, int frames = 4,
                    const std::vector<std::string>& extra = {});

// The layout entry of heatmap `id`; throws ag::Error listing the ids drawn.
const LayoutEntry& find_map(const SceneRun& run, const std::string& id);

// Checks every cell of heatmap `id`: its shape is expected's [rows, cols],
// and the centre pixel of each cell has the colour of the expected value
// under the scale the viewer reports (within `tolerance` per channel); where
// `keep` (bool [rows, cols], optional) is false the cell must be hatch grey.
::testing::AssertionResult cells_match(const SceneRun& run, const std::string& id,
                                       const Tensor& expected, const Tensor& keep = Tensor(),
                                       int tolerance = 2);

// Resident-set growth is measured only without AddressSanitizer, whose
// quarantine keeps freed memory by design.
#ifdef ATTOGRAD_SANITIZED
inline constexpr bool kMemoryIsMeasurable = false;
#else
inline constexpr bool kMemoryIsMeasurable = true;
#endif

// Runs `scene` for `frames` frames in an 800x600 window (software GL stays
// quick) with --stats, and checks that the resident set after the last frame
// is within 2 MiB of the one after the first 100. Returns the run.
SceneRun run_checking_memory(const std::string& scene, int frames);

// The "key value" lines of --stats in the viewer's output (other lines skipped).
std::map<std::string, double> read_stats(const std::string& output);

// t[b]: the b-th slice along the first dim, without that dim.
Tensor slice_of(const Tensor& t, int64_t b);

// The entries of `all` whose names start with `prefix`, with the prefix cut
// ("additive.W_k.weight" -> "W_k.weight"): a module's state dict out of the
// dumped inputs.
std::map<std::string, Tensor> with_prefix(const std::map<std::string, Tensor>& all,
                                          const std::string& prefix);

}  // namespace ag::viewer_test
