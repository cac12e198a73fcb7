// Running the viewer and reading back what it drew (see screen_check.h).
#include "screen_check.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ag::viewer_test {

const std::string& viewer_path() {
  static const std::string path = ATTOGRAD_VIEWER_PATH;
  return path;
}

const std::string& translate_program() {
  static const std::string path = ATTOGRAD_TRANSLATE_PROGRAM;
  return path;
}

const std::string& tutorial_18_program() {
  static const std::string path = ATTOGRAD_TUTORIAL_18_PROGRAM;
  return path;
}

std::string exercise_11_program(const std::string& variant) {
  const std::string stem = ATTOGRAD_EXERCISE_11_PROGRAM;
  return stem.empty() ? stem : stem + variant;
}

namespace {

// The text in single quotes for /bin/sh (a quote inside becomes '\'').
std::string quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out.append("'\\''");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

std::vector<LayoutEntry> read_layout(const std::string& path) {
  std::vector<LayoutEntry> layout;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    LayoutEntry entry;
    std::string map;
    fields >> entry.id >> entry.x >> entry.y >> entry.cell >> entry.rows >> entry.cols >> map >>
        entry.scale.lo >> entry.scale.hi;
    AG_CHECK(!fields.fail(), "read_layout", "bad line in " + path + ": '" + line + "'");
    entry.scale.map = viz::colormap_from_name(map);
    layout.push_back(entry);
  }
  return layout;
}

bool is_hatch_grey(viz::Rgb c) {
  return std::abs(c.r - c.g) <= 2 && std::abs(c.g - c.b) <= 2 && c.r >= 80 && c.r <= 160;
}

std::string rgb_str(viz::Rgb c) {
  std::ostringstream out;
  out << "(" << int{c.r} << ", " << int{c.g} << ", " << int{c.b} << ")";
  return out.str();
}

// The command that runs the viewer on `scene` and leaves screen.png,
// layout.txt and inputs.npz in `dir`. test_web_screen_NAME (ATTOGRAD_WEB_SITE
// defined) runs the browser build instead: the same options as URL parameters
// (options.h), in headless Chromium, through tests/web/drive.js.
std::string viewer_command(const std::string& program, const std::string& scene, int frames,
                           std::vector<std::string> extra, const std::vector<std::string>& written,
                           const std::filesystem::path& dir) {
  const std::string layout = (dir / "layout.txt").string(), inputs = (dir / "inputs.npz").string();
  std::ostringstream line;
#ifdef ATTOGRAD_WEB_SITE
  const std::string out_dir = "/tmp";  // in the page's file system
#else
  const std::string out_dir = dir.string();
#endif
  for (std::string& arg : extra) {
    for (size_t at = arg.find("{out}"); at != std::string::npos; at = arg.find("{out}"))
      arg.replace(at, 5, out_dir);
  }
#ifdef ATTOGRAD_WEB_SITE
  (void)program;  // the page runs the viewer alone
  std::ostringstream query;
  if (!scene.empty()) query << "scene=" << scene << "&";
  query << "frames=" << frames << "&layout=/tmp/layout.txt&dump-inputs=/tmp/inputs.npz";
  line << "node " << quote(ATTOGRAD_WEB_DRIVER) << " --site " << quote(ATTOGRAD_WEB_SITE)
       << " --out " << quote(dir.string()) << " --fetch " << quote("/tmp/layout.txt=" + layout)
       << " --fetch " << quote("/tmp/inputs.npz=" + inputs);
  for (const std::string& name : written) {
    line << " --fetch " << quote(out_dir + "/" + name + "=" + (dir / name).string());
  }
  for (size_t i = 0; i < extra.size(); ++i) {
    const std::string key = extra[i].substr(2);  // "--size" -> "size"
    const bool has_value = i + 1 < extra.size() && extra[i + 1].rfind("--", 0) != 0;
    if (key == "open" || key == "size") {
      // The page fetches the file from drive.js's server; the browser's
      // window takes the size.
      line << (key == "open" ? " --upload " : " --size ") << quote(extra[++i]);
    } else {
      query << "&" << key;
      if (has_value) query << "=" << extra[++i];
    }
  }
  line << " --query " << quote(query.str());
#else
  line << quote(program);
  if (!scene.empty()) line << " --scene " << quote(scene);
  line << " --frames " << frames << " --screenshot " << quote((dir / "screen.png").string())
       << " --layout " << quote(layout) << " --dump-inputs " << quote(inputs);
  for (const std::string& arg : extra) line << " " << quote(arg);
  (void)written;  // already where the test reads them
#endif
  return line.str();
}

}  // namespace

static SceneRun run_viewer_writing(const std::string& program, const std::string& scene, int frames,
                                   const std::vector<std::string>& extra,
                                   const std::vector<std::string>& written) {
  std::ostringstream name;
  name << "attograd-screen-" << scene << "-" << getpid();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name.str();
  std::filesystem::create_directories(dir);
  const std::string log = (dir / "output.txt").string();
  std::string command = viewer_command(program, scene, frames, extra, written, dir);
  command.append(" >").append(quote(log)).append(" 2>&1");
  SceneRun run;
  const int status = std::system(command.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream output(log);
  run.output.assign(std::istreambuf_iterator<char>(output), std::istreambuf_iterator<char>());
  run.command = command;
  run.dir = dir.string();
  return run;
}

SceneRun run_viewer(const std::string& scene, int frames, const std::vector<std::string>& extra) {
  return run_viewer_writing(viewer_path(), scene, frames, extra, {});
}

// run_viewer_writing, then the screenshot, layout and inputs read back; a
// non-zero exit fails the test.
static SceneRun run_program_writing(const std::string& program, const std::string& scene,
                                    int frames, const std::vector<std::string>& extra,
                                    const std::vector<std::string>& written) {
  SceneRun run = run_viewer_writing(program, scene, frames, extra, written);
  if (run.exit_code != 0) {
    ADD_FAILURE() << "viewer exited with " << run.exit_code << ":\n"
                  << run.command << "\n"
                  << run.output;
    return run;
  }
  const std::filesystem::path dir = run.dir;
  const std::string png = (dir / "screen.png").string();
  run.screenshot = viz::read_png(png);
  run.layout = read_layout((dir / "layout.txt").string());
  run.inputs = load_npz((dir / "inputs.npz").string());
  // Keep the screenshot where a person can look at it: ctest's output names it.
  std::printf("screenshot: %s\n", png.c_str());
  return run;
}

SceneRun run_scene(const std::string& scene, int frames, const std::vector<std::string>& extra) {
  return run_scene_writing(scene, frames, extra, {});
}

SceneRun run_scene_writing(const std::string& scene, int frames,
                           const std::vector<std::string>& extra,
                           const std::vector<std::string>& written) {
  return run_program_writing(viewer_path(), scene, frames, extra, written);
}

SceneRun run_program_scene(const std::string& program, const std::string& scene, int frames,
                           const std::vector<std::string>& extra) {
  return run_program_writing(program, scene, frames, extra, {});
}

const LayoutEntry& find_map(const SceneRun& run, const std::string& id) {
  std::string drawn;
  for (const LayoutEntry& entry : run.layout) {
    if (entry.id == id) return entry;
    drawn += " " + entry.id;
  }
  throw Error("find_map: no heatmap '" + id + "' in the last frame; drawn:" + drawn);
}

::testing::AssertionResult cells_match(const SceneRun& run, const std::string& id,
                                       const Tensor& expected, const Tensor& keep, int tolerance) {
  const LayoutEntry& map = find_map(run, id);
  if (expected.dim() != 2 || expected.size(0) != map.rows || expected.size(1) != map.cols) {
    return ::testing::AssertionFailure() << id << ": drawn " << map.rows << "x" << map.cols
                                         << ", expected " << shape_str(expected.shape());
  }
  const std::vector<double> values = expected.to_vector();
  const std::vector<double> kept = keep.defined() ? keep.to_vector() : std::vector<double>();
  int64_t checked = 0;
  for (int64_t i = 0; i < map.rows; ++i) {
    for (int64_t j = 0; j < map.cols; ++j) {
      const size_t k = static_cast<size_t>(i * map.cols + j);
      const int x = static_cast<int>(map.x + map.cell * (static_cast<double>(j) + 0.5));
      const int y = static_cast<int>(map.y + map.cell * (static_cast<double>(i) + 0.5));
      const viz::Rgb got = run.screenshot.at(x, y);
      if (!kept.empty() && kept[k] == 0.0) {
        if (!is_hatch_grey(got)) {
          return ::testing::AssertionFailure()
                 << id << " cell (" << i << ", " << j << ") is masked but drawn " << rgb_str(got);
        }
        ++checked;
        continue;
      }
      const viz::Rgb want = map.scale(values[k]);
      if (std::abs(got.r - want.r) > tolerance || std::abs(got.g - want.g) > tolerance ||
          std::abs(got.b - want.b) > tolerance) {
        return ::testing::AssertionFailure()
               << id << " cell (" << i << ", " << j << ") at pixel (" << x << ", " << y
               << "): value " << values[k] << " should be " << rgb_str(want) << ", drawn "
               << rgb_str(got);
      }
      ++checked;
    }
  }
  return ::testing::AssertionSuccess() << id << ": " << checked << " cells match";
}

std::map<std::string, double> read_stats(const std::string& output) {
  std::map<std::string, double> stats;
  std::istringstream lines(output);
  std::string line, key;
  double value = 0;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    if (fields >> key >> value) stats[key] = value;
  }
  return stats;
}

SceneRun run_checking_memory(const std::string& scene, int frames) {
  SceneRun run = run_scene(scene, frames, {"--stats", "--size", "800x600"});
  std::map<std::string, double> stats = read_stats(run.output);
  EXPECT_EQ(stats.count("rss_kib_first"), 1u) << run.output;
  EXPECT_EQ(stats["frames"], frames);
  EXPECT_GT(stats["rss_kib_first"], 0);
  EXPECT_LT(stats["rss_kib_last"] - stats["rss_kib_first"], 2048) << run.output;
  std::printf("%s", run.output.c_str());
  return run;
}

Tensor slice_of(const Tensor& t, int64_t b) {
  return squeeze(narrow(t, 0, b, 1), 0);
}

std::map<std::string, Tensor> with_prefix(const std::map<std::string, Tensor>& all,
                                          const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : all) {
    if (name.rfind(prefix, 0) == 0) out[name.substr(prefix.size())] = t;
  }
  return out;
}

}  // namespace ag::viewer_test
