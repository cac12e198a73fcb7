// Scene "file": opens a .npy/.npz and shows what it holds.
//
//   attention weights  any float [..., Tq, Tk] (e.g. numpy.save of PyTorch's
//                      weights): a grid of maps, at most kMaxMaps at a time
//                      and kMaxCells x kMaxCells cells of each;
//   a state dict       of AdditiveAttention or MultiHeadAttention (d2l's
//                      names, as save_npz(path, module.state_dict()) or
//                      numpy.savez of a PyTorch state dict writes them): the
//                      module, its parameters and its attention weights on
//                      seeded random inputs.
// A file it cannot show leaves the previous content in place under a
// message (error()); nothing a file holds can crash the viewer.
//
// Declared in a header (unlike the other scenes) so that the null-backend
// test can read error() and content() after opening bad files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attograd/viz.h"
#include "scene.h"

namespace ag::viewer {

class FileScene : public Scene {
 public:
  static constexpr int64_t kMaxMaps = 16;
  static constexpr int64_t kMaxCells = 256;

  // Starts with an example (a seeded MultiHeadAttention's state dict), so
  // that the tab shows what a file looks like before one is opened.
  FileScene();
  const char* name() const override { return "file"; }
  const char* label() const override { return "File"; }
  void draw() override;
  std::map<std::string, Tensor> inputs() const override;
  // Loads `path`; needs no ImGui context (main calls it before creating one).
  void open_file(const std::string& path) override;

  // The red message under the path field: why the last file was not shown
  // (or which of its values are not finite); empty when all went well.
  const std::string& error() const { return error_; }
  // What is shown: "weights", "AdditiveAttention" or "MultiHeadAttention".
  const std::string& content() const { return content_; }

 private:
  // ---- opening: classify the file, validate it, only then replace the content
  void open_archive(const std::string& source, const std::map<std::string, Tensor>& entries);
  void show_weights(const std::string& source, const Tensor& t);
  void show_state_dict(const std::string& source, const std::map<std::string, Tensor>& state);
  void rebuild_module();  // (MultiHeadAttention: rebuilt for num_heads) seeded inputs, a forward

  std::string content_;  // see content()
  std::string source_;   // the file (and npz entry) shown
  std::string error_;

  // ---- panel: the path field, Open, the files of the current directory --------
  void draw_open_panel();
  void refresh_file_list();
  char path_field_[1024] = "";
  std::vector<std::string> directory_files_;

  // ---- panel: attention weights ------------------------------------------------
  void draw_weights();
  Tensor weights_;  // as loaded: [..., Tq, Tk]
  Tensor maps_;     // float, leading dims flattened: [N, Tq, Tk]
  Tensor finite_;   // bool [N, Tq, Tk]: false cells are drawn hatched
  viz::ColorScale weight_scale_;
  int first_map_ = 0;                      // the first of the kMaxMaps maps drawn
  std::map<std::string, Tensor> archive_;  // an npz of several weight arrays
  int archive_entry_ = 0;

  // ---- panel: a state dict --------------------------------------------------------
  void draw_state_dict();
  std::map<std::string, Tensor> state_;              // as loaded (file dtypes)
  std::unique_ptr<nn::AdditiveAttention> additive_;  // the one content_ names
  std::unique_ptr<nn::MultiHeadAttention> mha_;
  int64_t key_size_ = 0, query_size_ = 0, value_size_ = 0, num_hiddens_ = 0;
  std::vector<int> head_choices_;  // the divisors of num_hiddens
  int head_choice_ = 0;
  int seed_ = 0, num_queries_ = 4, num_keys_ = 6;
  Tensor queries_, keys_, values_, module_weights_;  // module_weights_ [heads or 1, Tq, Tk]
};

}  // namespace ag::viewer
