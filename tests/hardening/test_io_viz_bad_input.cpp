// Bad and extreme input for io (file names that are no file, folders in the
// way, files that are empty or not safetensors), the data helpers not in
// test_data_bad_input.cpp (Vocab, bleu, truncate_pad, the NMT arrays, rows
// by index), and viz (tensors of the wrong rank, empty or undefined, limits
// that are NaN or reversed, plots with no points, sizes too small to draw).
#include <doctest/doctest.h>
#include <qkv/data/bleu.hpp>
#include <qkv/data/dataloader.hpp>
#include <qkv/data/nmt.hpp>
#include <qkv/data/vocab.hpp>
#include <qkv/io/checkpoint.hpp>
#include <qkv/io/safetensors.hpp>
#include <qkv/qkv.hpp>
#include <qkv/viz.hpp>
#include <qkv/viz/computation.hpp>

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "hardening/bad_input.hpp"
#include "io/io_test_util.hpp"
#include "viz/viz_test_util.hpp"

using namespace qkv;
using qkv::test::BadInput;
using qkv::test::check_bad_inputs;
using namespace qkv::test::extremes;

TEST_CASE("hardening/io: file names that are no file, and files that are not safetensors") {
  test::TempDir dir("hardening_io");
  const auto folder = dir.path;
  test::write_bytes(dir / "plain.txt", "not a folder");
  test::write_bytes(dir / "text.safetensors", "hello, this is text and not a safetensors file");
  io::save_safetensors(dir / "w.safetensors", {{"weight", ones({2, 3})}});
  test::write_bytes(dir / "empty", "");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  std::filesystem::create_symlink("/dev/null", dir / "null_link");
  std::filesystem::create_symlink("loop", dir / "loop");

  check_bad_inputs({
      {"save_safetensors: an empty path",
       [] {
         io::save_safetensors("", {{"w", ones({1})}});
       },
       "save_safetensors: '': not a file name"},
      {"save_safetensors: a path ending in '/'",
       [=] {
         io::save_safetensors(folder.string() + "/", {{"w", ones({1})}});
       },
       "not a file name"},
      {"save_safetensors: over a folder",
       [=] {
         io::save_safetensors(folder, {{"w", ones({1})}});
       },
       "save_safetensors: '" + folder.string() + "': '" + folder.string() +
           "' is a folder, not a regular file: nothing was written"},
      {"save_safetensors: inside a file",
       [=] {
         io::save_safetensors(folder / "plain.txt" / "w", {{"w", ones({1})}});
       },
       "cannot look at '" + (folder / "plain.txt" / "w").string() + "': Not a directory"},
      {"save_safetensors: in a folder that does not exist",
       [=] {
         io::save_safetensors(folder / "missing" / "w", {{"w", ones({1})}});
       },
       "cannot open the folder '" + (folder / "missing").string() + "': No such file or directory"},
      {"save_safetensors: over a FIFO",
       [=] {
         io::save_safetensors(folder / "fifo", {{"w", ones({1})}});
       },
       fmt::format("'{}' is a FIFO (named pipe), not a regular file: nothing was written", (folder / "fifo").string())},
      {"save_safetensors: over a device (through a link)",
       [=] {
         io::save_safetensors(folder / "null_link", {{"w", ones({1})}});
       },
       fmt::format("save_safetensors: '{}': '/dev/null' is a character device, not a regular file",
                   (folder / "null_link").string())},
      {"save_safetensors: a loop of links",
       [=] {
         io::save_safetensors(folder / "loop", {{"w", ones({1})}});
       },
       "more than 40 symbolic links in a row from '" + (folder / "loop").string() + "' (a loop?)"},
      {"load_safetensors: an empty path", [] { io::load_safetensors(""); },
       "load_safetensors: '': cannot open: No such file or directory"},
      {"load_safetensors: a folder", [=] { io::load_safetensors(folder); }, "is a directory"},
      {"load_safetensors: a device that never ends", [] { io::load_safetensors("/dev/zero"); },
       "load_safetensors: '/dev/zero': not a regular file (a device, pipe or socket)"},
      {"load_safetensors: an empty file", [=] { io::load_safetensors(folder / "empty"); },
       "the file is 0 bytes, shorter than the 8-byte header length"},
      {"load_safetensors: text", [=] { io::load_safetensors(folder / "text.safetensors"); },
       "header length 8367736964726416744 is over the 100 MB limit (file of 46 bytes)"},
      {"load_checkpoint: weights of another shape",
       [=] {
         nn::Linear model(3, 3);
         io::load_checkpoint(folder / "w.safetensors", model);
       },
       "not a checkpoint of this Linear: 'weight' has shape (2, 3) in the state dict, (3, 3) in the model"},
      {"load_checkpoint: an optimizer for a file without one",
       [=] {
         nn::Linear model(3, 2, false);
         optim::SGD opt(model.parameters(), 0.1f);
         io::load_checkpoint(folder / "w.safetensors", model, &opt);
       },
       "the file holds no optimizer state"},
  });
}

TEST_CASE("hardening/io: a file larger than memory is a qkv::Error, not std::bad_alloc") {
  if (!test::huge_allocations_fail()) return;  // see bad_input.hpp
  test::TempDir dir("hardening_io_huge");
  const auto path = dir / "huge.safetensors";
  // 1 TiB of holes: the file takes no room on the disk.
  test::write_bytes(path, "");
  std::filesystem::resize_file(path, uint64_t{1} << 40);
  CHECK_THROWS_WITH_AS(io::load_safetensors(path),
                       doctest::Contains("the file's 1099511627776 bytes do not fit in memory"), Error);
}

TEST_CASE("hardening/data: Vocab, bleu, truncate_pad, the NMT arrays and rows by index") {
  const data::Vocab vocab(std::vector<std::string>{"a", "b", "a"}, 0, {"<pad>", "<bos>", "<eos>"});
  check_bad_inputs({
      {"Vocab: min_freq -1", [] { data::Vocab(std::vector<std::string>{"a"}, -1); }, "Vocab: min_freq -1 must be >= 0"},
      {"Vocab: a reserved token twice",
       [] {
         data::Vocab(std::vector<std::string>{"a"}, 0, {"<pad>", "<pad>"});
       },
       "Vocab: reserved token '<pad>' is given twice"},
      {"Vocab: <unk> reserved", [] { data::Vocab(std::vector<std::string>{"a"}, 0, {"<unk>"}); }, "is always id 0"},
      {"Vocab::to_token: -1", [=] { vocab.to_token(-1); },
       "Vocab: index -1 is out of range for a vocabulary of size 6"},
      {"Vocab::to_token: size", [=] { vocab.to_token(6); }, "index 6 is out of range"},
      {"Vocab::to_tokens: INT64_MIN",
       [=] {
         vocab.to_tokens({0, std::numeric_limits<int64_t>::min()});
       },
       "index -9223372036854775808 is out of range"},
      {"bleu: k 0", [] { data::bleu("a b", "a b", 0); }, "bleu: k 0 must be >= 1"},
      {"bleu: k INT64_MIN", [] { data::bleu("a b", "a b", std::numeric_limits<int64_t>::min()); }, "must be >= 1"},
      {"truncate_pad: num_steps 0",
       [] {
         data::truncate_pad(std::vector<int64_t>{1, 2}, 0, 0);
       },
       "truncate_pad: num_steps 0 must be positive"},
      {"truncate_pad: num_steps INT64_MAX", [] { data::truncate_pad(std::vector<int64_t>{1}, kMax, 0); },
       "truncate_pad: num_steps 9223372036854775807 is too large to allocate"},
      {"build_array_nmt: no <pad>",
       [] { data::build_array_nmt({{"a"}}, data::Vocab(std::vector<std::string>{"a"}), 3); },
       "build_array_nmt: the vocabulary has no '<pad>' token"},
      {"build_array_nmt: num_steps -1", [=] { data::build_array_nmt({{"a"}}, vocab, -1); },
       "num_steps -1 must be positive"},
      {"tokenize_nmt: num_examples -1", [] { data::tokenize_nmt("a\tb\n", -1); }, "num_examples -1 must be >= 0"},
      {"load_data_nmt: no such file", [] { data::load_data_nmt("/nonexistent/fra.txt", 8); },
       "read_data_nmt: cannot open '/nonexistent/fra.txt'"},
      {"load_data_nmt: min_freq -1", [] { data::load_data_nmt("/nonexistent/fra.txt", 8, -1); },
       "min_freq -1 must be >= 0"},
      {"take_rows: index past the end",
       [] {
         data::detail::take_rows(ones({3, 2}), {0, 3});
       },
       "example index 3 is out of range for 3 examples"},
      {"take_rows: index -1", [] { data::detail::take_rows(IntTensor::empty({3}), {-1}); }, "example index -1"},
      {"epoch_order: n -1",
       [] {
         Generator gen(0);
         data::detail::epoch_order(-1, true, gen);
       },
       "epoch_order: the number of examples -1 must be >= 0"},
  });
}

TEST_CASE("hardening/viz: bad tensors, limits, series and sizes") {
  test::TempDir dir("hardening_viz");
  std::filesystem::create_directories(dir / "bin");
  test::write_bytes(dir / "bin/dot", "#!/bin/sh\nexit 0\n");  // a Graphviz that draws nothing
  std::filesystem::permissions(dir / "bin/dot", std::filesystem::perms::owner_all);
  const auto svg = dir / "picture.svg", stem = dir / "graph";
  viz::HeatmapOptions reversed;
  reversed.vmin = 1;
  reversed.vmax = 0;
  viz::HeatmapOptions infinite;
  infinite.vmax = kInf;
  viz::HeatmapOptions labels;
  labels.row_labels = {"one"};
  viz::TextOptions no_rows;
  no_rows.max_rows = 0;
  viz::PlotOptions tiny;
  tiny.width = 1;
  viz::PlotOptions huge;
  huge.width = huge.height = std::numeric_limits<int>::max();

  check_bad_inputs({
      {"heatmap_text: undefined", [] { viz::heatmap_text(Tensor()); }, "heatmap_text: undefined tensor"},
      {"heatmap_text: 1-d", [] { viz::heatmap_text(ones({3})); }, "expected a 2-D tensor (rows, cols), got shape (3)"},
      {"heatmap_text: 0-d", [] { viz::heatmap_text(scalar_tensor(1)); }, "got shape ()"},
      {"heatmap_text: empty",
       [] {
         viz::heatmap_text(zeros({0, 3}));
       },
       "empty tensor of shape (0, 3)"},
      {"heatmap_text: vmin above vmax",
       [=] {
         viz::heatmap_text(ones({2, 2}), reversed);
       },
       "vmin 1 must be below vmax 0"},
      {"heatmap_text: infinite vmax",
       [=] {
         viz::heatmap_text(ones({2, 2}), infinite);
       },
       "colour limits must be finite"},
      {"heatmap_text: 1 row label for 2 rows",
       [=] {
         viz::heatmap_text(ones({2, 2}), labels);
       },
       "heatmap_text: 1 row_labels for a tensor of shape (2, 2), which needs 2"},
      {"heatmap_text: max_rows 0",
       [=] {
         viz::heatmap_text(ones({2, 2}), {}, no_rows);
       },
       "max_rows and max_cols must be at least 1, got 0 and 64"},
      {"save_heatmap_svg: 3-d",
       [=] {
         viz::save_heatmap_svg(svg, ones({1, 2, 2}));
       },
       "expected a 2-D tensor"},
      {"save_heatmap_svg: an empty path",
       [] {
         viz::save_heatmap_svg("", ones({2, 2}));
       },
       "empty file name"},
      {"heatmap_svg: 3-d",
       [] {
         viz::heatmap_svg(ones({1, 2, 2}));
       },
       "heatmap_svg: expected a 2-D tensor"},
      {"heatmap_grid_svg: 2-d",
       [] {
         viz::heatmap_grid_svg(ones({2, 2}));
       },
       "heatmap_grid_svg: expected a 4-D tensor (rows, cols, H, W), got shape (2, 2)"},
      {"save_heatmap_grid_svg: 2-d",
       [=] {
         viz::save_heatmap_grid_svg(svg, ones({2, 2}));
       },
       "expected a 4-D tensor (rows, cols, H, W), got shape (2, 2)"},
      {"save_heatmap_grid_svg: empty",
       [=] {
         viz::save_heatmap_grid_svg(svg, zeros({1, 0, 2, 2}));
       },
       "empty tensor of shape (1, 0, 2, 2)"},
      {"line_plot_text: no series", [] { viz::line_plot_text({}); }, "line_plot_text: no series to plot"},
      {"line_plot_text: a series with no points",
       [] {
         viz::line_plot_text({{"loss", {}, {}}});
       },
       "series 0 ('loss') has no points"},
      {"line_plot_text: 2 x for 3 y",
       [] {
         viz::line_plot_text({{"loss", {1, 2}, {1, 2, 3}}});
       },
       "series 0 ('loss') has 2 x values and 3 y values"},
      {"line_plot_text: only NaN and infinite points",
       [] {
         viz::line_plot_text({{"loss", {}, {kNaN, kInf}}});
       },
       "no point has a finite x and y"},
      {"line_plot_text: width 1",
       [=] {
         viz::line_plot_text({{"loss", {}, {1, 2}}}, tiny);
       },
       "width and height must be at least 2, got 1 and 16"},
      {"line_plot_text: width and height INT_MAX (a canvas of 2^62 cells)",
       [=] {
         viz::line_plot_text({{"loss", {}, {1, 2}}}, huge);
       },
       "line_plot_text: a plot of 2147483647 x 2147483647 cells is too large for a terminal (at most 1048576 cells)"},
      {"save_line_plot_svg: width 1",
       [=] {
         viz::save_line_plot_svg(svg, {{"loss", {}, {1, 2}}}, tiny);
       },
       "width and height must be at least 2"},
      {"line_plot_svg: a series with no points",
       [] {
         viz::line_plot_svg({{"loss", {}, {}}});
       },
       "line_plot_svg: series 0 ('loss') has no points"},
      {"computation_svg: keys of another size than the query",
       [] {
         viz::computation_svg({.query = ones({4}),
                               .keys = ones({3, 2}),
                               .scores = ones({3}),
                               .weights = ones({3}),
                               .values = ones({3, 2}),
                               .output = ones({2})});
       },
       "computation_svg: the keys' size differs from the query's: query (4), keys (3, 2)"},
      {"save_computation_svg: no tensors", [=] { viz::save_computation_svg(svg, {}); },
       "save_computation_svg: every tensor must be given: query none"},
      {"save_computation_svg: two weights for three keys",
       [=] {
         viz::save_computation_svg(svg, {.query = ones({2}),
                                         .keys = ones({3, 2}),
                                         .scores = ones({3}),
                                         .weights = ones({2}),
                                         .values = ones({3, 2}),
                                         .output = ones({2})});
       },
       "scores, weights and values need one entry per key"},
      {"graph_dot: undefined", [] { viz::graph_dot(Tensor()); }, "graph_dot: undefined tensor"},
      {"save_graph: undefined", [=] { viz::save_graph(stem, Tensor()); }, "save_graph: undefined tensor"},
      {"save_graph: a dot that prints no SVG",
       [=] {
         test::ScopedEnv path("PATH", (dir / "bin").string());
         viz::save_graph(stem, sum(ones({2}).requires_grad_()));
       },
       "exited 0 but printed no SVG (0 bytes)"},
  });
  CHECK_FALSE(std::filesystem::exists(svg));
}

// The optimizer knows its parameters by index; the error says which of the
// model's parameters that is, by its dotted name.
TEST_CASE("hardening/io: load_checkpoint names the optimizer's parameters by the model's names") {
  test::TempDir dir("hardening_ckpt_names");
  Generator gen(0);
  auto make = [&] {
    auto model = std::make_shared<nn::Seq2SeqEncoder>(5, 3, 4, 1, 0.0f, gen);
    return model;
  };
  auto model = make();
  optim::Adam adam(model->parameters(), 0.01f);
  for (Tensor& p : model->parameters()) p.set_grad(ones(p.shape()));
  adam.step();
  io::save_checkpoint(dir / "good.safetensors", *model, &adam);
  // The same checkpoint without parameter 1's moments (rnn.weight_ih_l0's).
  StateDict damaged = io::load_safetensors(dir / "good.safetensors");
  damaged.erase("optimizer.state.1.exp_avg");
  damaged.erase("optimizer.state.1.exp_avg_sq");
  io::save_safetensors(dir / "damaged.safetensors", damaged, {{"format", "pt"}, {"optimizer", "Adam"}});

  auto fresh = make();
  optim::Adam fresh_adam(fresh->parameters(), 0.01f);
  CHECK(fresh->named_parameters()[1].first == "rnn.weight_ih_l0");
  CHECK_THROWS_WITH_AS(
      io::load_checkpoint(dir / "damaged.safetensors", *fresh, &fresh_adam),
      doctest::Contains("Adam: parameter 1 (shape (12, 3)) has 'state.1.step' = 1 but no exp_avg or exp_avg_sq: its "
                        "state is missing (a state dict of an updated parameter holds all of exp_avg, exp_avg_sq) "
                        "(optimizer parameter 1 is the model's 'rnn.weight_ih_l0')"),
      Error);
  CHECK(fresh_adam.state(1).step == 0);  // nothing loaded
}
