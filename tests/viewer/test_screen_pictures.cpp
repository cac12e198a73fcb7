// The pictures README.md and docs/ show are what the code draws now: each
// picture listed in scripts/pictures.txt is rendered again, with the
// arguments scripts/screenshots.sh gives it, and compared with the committed
// docs/NAME.png. A scene changed without picturing it again fails here, with
// the command that pictures it. The desktop viewer's pictures are checked by
// viewer_test_screen_pictures, the browser's by web_screen_pictures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "screen_check.h"
#include "test_util.h"

namespace ag::viewer_test {
namespace {

struct Picture {
  std::string name;  // docs/NAME.png
  bool web = false;  // the browser viewer's
  int frames = 5;
  std::vector<std::string> args;  // the viewer's, --frames taken out
};

// scripts/pictures.txt, as screenshots.sh reads it.
std::vector<Picture> listed_pictures() {
  const std::string repo = testing::source_path("");
  std::ifstream in(testing::source_path("scripts/pictures.txt"));
  std::vector<Picture> pictures;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    Picture picture;
    words >> picture.name;
    for (std::string word; words >> word;) {
      for (size_t at; (at = word.find("{repo}")) != std::string::npos;) {
        word.replace(at, 6, repo.substr(0, repo.find_last_not_of('/') + 1));
      }
      if (word == "web" && picture.args.empty()) {
        picture.web = true;
      } else if (word == "--frames") {
        words >> picture.frames;
      } else {
        picture.args.push_back(word);
      }
    }
    pictures.push_back(picture);
  }
  return pictures;
}

// A pixel differs when a channel is off by more than this (a rendering is
// exact on one machine; the margin is for another Mesa's antialiasing).
constexpr int kChannelTolerance = 32;
// A picture is stale when more than this share of its pixels differ: a
// steps/s or milliseconds readout (under 200 pixels) passes, one changed
// line of text or a redrawn map (thousands) fails.
constexpr double kStaleShare = 0.001;

// Empty when `drawn` is `committed` within the tolerances; else what differs.
std::string staleness(const viz::Image& committed, const viz::Image& drawn) {
  if (committed.width != drawn.width || committed.height != drawn.height) {
    return "it is " + std::to_string(committed.width) + "x" + std::to_string(committed.height) +
           ", the viewer now draws " + std::to_string(drawn.width) + "x" +
           std::to_string(drawn.height);
  }
  int64_t differing = 0;
  int x0 = drawn.width, y0 = drawn.height, x1 = -1, y1 = -1;
  for (int y = 0; y < drawn.height; ++y) {
    for (int x = 0; x < drawn.width; ++x) {
      const size_t at = 3 * (static_cast<size_t>(y) * static_cast<size_t>(drawn.width) + x);
      int off = 0;
      for (size_t c = 0; c < 3; ++c) {
        off = std::max(off, std::abs(committed.rgb[at + c] - drawn.rgb[at + c]));
      }
      if (off <= kChannelTolerance) continue;
      ++differing;
      x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
    }
  }
  const double share = static_cast<double>(differing) / (1.0 * drawn.width * drawn.height);
  if (share <= kStaleShare) return "";
  std::ostringstream what;
  what << differing << " pixels (" << 100 * share << "%) differ, within x " << x0 << ".." << x1
       << ", y " << y0 << ".." << y1;
  return what.str();
}

TEST(Pictures, EveryPictureIsWhatTheCodeDrawsNow) {
#ifdef ATTOGRAD_SANITIZED
  GTEST_SKIP() << "the release pass checks the pictures; here the scenes that train run 3x slower";
#endif
#ifdef ATTOGRAD_WEB_SCREEN
  const bool web = true;
#else
  const bool web = false;
#endif
  const std::vector<Picture> pictures = listed_pictures();
  ASSERT_GE(pictures.size(), 10u) << "scripts/pictures.txt lists too few pictures";
  int checked = 0;
  for (const Picture& picture : pictures) {
    if (picture.web != web) continue;
    const std::string path = testing::source_path("docs/" + picture.name + ".png");
    const SceneRun run = run_scene("", picture.frames, picture.args);
    if (run.exit_code != 0) continue;  // run_scene has failed the test, saying why
    const std::string stale = staleness(viz::read_png(path), run.screenshot);
    EXPECT_TRUE(stale.empty()) << "docs/" << picture.name << ".png is stale: " << stale
                               << ". What the code draws now: " << run.dir
                               << "/screen.png. Picture it again with scripts/screenshots.sh "
                               << picture.name << ", look at it, and read its caption again.";
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

}  // namespace
}  // namespace ag::viewer_test
