// Bad and extreme input for the data readers, TensorDataset and DataLoader:
// undefined and 0-d tensors, batch sizes at the end of int64, zero-width rows,
// labels whose class count overflows, empty files, bytes that are not UTF-8,
// and padding lengths no machine can hold.
#include <doctest/doctest.h>
#include <qkv/data/dataloader.hpp>
#include <qkv/qkv.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "datasets/fixtures.hpp"
#include "hardening/bad_input.hpp"

using namespace qkv;
using qkv::test::BadInput;
using qkv::test::check_bad_inputs;
using namespace qkv::test::extremes;
using qkv::test::temp_file;

TEST_CASE("hardening/data: bad input to TensorDataset and DataLoader") {
  check_bad_inputs({
      {"TensorDataset: an undefined Tensor", [] { data::TensorDataset<Tensor>{Tensor()}; },
       "TensorDataset: tensor 0 is undefined"},
      {"TensorDataset: an undefined IntTensor", [] { data::TensorDataset<Tensor, IntTensor>(ones({2}), IntTensor()); },
       "TensorDataset: tensor 1 is undefined"},
      {"TensorDataset: a 0-d tensor", [] { data::TensorDataset<Tensor>{scalar_tensor(1)}; }, "tensor 0 is a scalar"},
      {"TensorDataset: first dims differ", [] { data::TensorDataset<Tensor, IntTensor>(ones({2}), int_tensor({1})); },
       "first dims 1 and 2 differ"},
      {"DataLoader: batch_size 0", [] { data::DataLoader(data::TensorDataset(ones({2})), {.batch_size = 0}); },
       "DataLoader: batch_size 0 must be positive"},
      {"DataLoader: batch_size INT64_MIN",
       [] { data::DataLoader(data::TensorDataset(ones({2})), {.batch_size = std::numeric_limits<int64_t>::min()}); },
       "must be positive"},
  });
}

TEST_CASE("hardening/data: DataLoader at the extremes") {
  // 10 examples with ids 0 … 9.
  data::TensorDataset dataset(arange(10), arange_int(0, 10));

  SUBCASE("batch_size INT64_MAX is one batch of every example, as PyTorch's len(loader) = ceil(10 / B) = 1") {
    data::DataLoader loader(dataset, {.batch_size = kMax});
    CHECK(loader.size() == 1);
    int64_t batches = 0;
    for (auto& [X, y] : loader) {
      CHECK(y.to_vector() == arange_int(0, 10).to_vector());
      CHECK(X.shape() == Shape{10});
      ++batches;
    }
    CHECK(batches == 1);
  }
  SUBCASE("batch_size INT64_MAX with drop_last is no batch: floor(10 / B) = 0") {
    data::DataLoader loader(dataset, {.batch_size = kMax, .drop_last = true});
    CHECK(loader.size() == 0);
    CHECK(loader.begin() == loader.end());
  }
  SUBCASE("rows of width 0 (an (N, 0) tensor) batch to (B, 0)") {
    data::DataLoader loader(data::TensorDataset(zeros({3, 0}), IntTensor::empty({3, 0})), {.batch_size = 2});
    std::vector<Shape> shapes;
    for (auto& [X, y] : loader) {
      shapes.push_back(X.shape());
      CHECK(y.shape() == X.shape());
    }
    CHECK(shapes == std::vector<Shape>{Shape{2, 0}, Shape{1, 0}});
  }
}

TEST_CASE("hardening/data: bad input to the text readers") {
  check_bad_inputs({
      {"read_text_classification: label INT64_MAX (label + 1 classes overflows)",
       [] { data::read_text_classification(temp_file("hd_tc_huge_label.txt", "9223372036854775807\tgood\n")); },
       "line 1: label 9223372036854775807 is too large"},
      {"read_text_classification: a label outside the classes given (lesson 12's held-out 7)",
       [] { data::read_text_classification(temp_file("hd_tc_class_7.txt", "1\tgood\n7\tbad\n"), 2); },
       "line 2: label 7 is not one of the 2 classes 0 … 1"},
      {"read_text_classification: one class, label 1",
       [] { data::read_text_classification(temp_file("hd_tc_one_class.txt", "0\tgood\n1\tbad\n"), 1); },
       "line 2: label 1 is not one of the 1 classes 0 … 0"},
      {"read_text_classification: num_classes negative",
       [] { data::read_text_classification(temp_file("hd_tc_negative_classes.txt", "0\tgood\n"), -1); },
       "num_classes -1 must be >= 0"},
      {"read_text_classification: num_classes INT64_MIN",
       [] { data::read_text_classification(temp_file("hd_tc_min_classes.txt", "0\tgood\n"), INT64_MIN); },
       "num_classes -9223372036854775808 must be >= 0"},
      {"read_text_classification: a label past int64",
       [] { data::read_text_classification(temp_file("hd_tc_past_int64.txt", "99999999999999999999\tgood\n")); },
       "label '99999999999999999999' is not a class id"},
      {"read_text_classification: a byte that is never UTF-8",
       [] { data::read_text_classification(temp_file("hd_tc_ff.txt", "0\tgood\n1\tba\xFFrd\n")); },
       "line 2, byte 5 of the line: 0xFF is not valid UTF-8"},
      {"read_data_nmt: an overlong encoding of '/'",
       [] { data::read_data_nmt(temp_file("hd_nmt_overlong.txt", "a\xC0\xAF\tb\n")); },
       "line 1, byte 2 of the line: 0xC0 is not valid UTF-8"},
      {"read_data_nmt: a UTF-16 surrogate encoded as UTF-8",
       [] { data::read_data_nmt(temp_file("hd_nmt_surrogate.txt", "go\t\xED\xA0\x80\n")); },
       "line 1, byte 4 of the line: 0xED is not valid UTF-8"},
      {"read_data_nmt: a character cut off at the end of the file",
       [] { data::read_data_nmt(temp_file("hd_nmt_cut.txt", "go\tva\xC3")); },
       "line 1, byte 6 of the line: 0xC3 is not valid UTF-8"},
      {"read_data_nmt: a lone continuation byte",
       [] { data::read_data_nmt(temp_file("hd_nmt_continuation.txt", "go\n\x80")); },
       "line 2, byte 1 of the line: 0x80 is not valid UTF-8"},
      {"load_data_nmt: an empty file", [] { data::load_data_nmt(temp_file("hd_nmt_empty.txt", ""), 8); },
       "has no sentence pairs (the file is empty or blank)"},
      {"load_data_nmt: a blank file", [] { data::load_data_nmt(temp_file("hd_nmt_blank.txt", "\n  \n"), 8); },
       "has no sentence pairs"},
      {"read_text_classification: an empty file (zero examples)",
       [] { data::read_text_classification(temp_file("hd_tc_empty.txt", "")); },
       "has no examples (the file is empty or blank)"},
      {"read_text_classification: a blank file",
       [] { data::read_text_classification(temp_file("hd_tc_blank.txt", "\n  \n")); }, "has no examples"},
      {"read_text_classification: a device that never ends (it exhausted memory)",
       [] { data::read_text_classification("/dev/zero"); },
       "read_text_classification: '/dev/zero': not a regular file (a device, pipe or socket)"},
      {"read_data_nmt: a device that never ends", [] { data::read_data_nmt("/dev/zero"); },
       "read_data_nmt: '/dev/zero': not a regular file"},
      {"load_data_nmt: a device that never ends", [] { data::load_data_nmt("/dev/zero", 8); }, "not a regular file"},
      {"load_data_nmt: num_steps 0", [] { data::load_data_nmt(temp_file("hd_nmt_steps0.txt", "go\tva\n"), 0); },
       "load_data_nmt: num_steps 0 must be positive"},
      {"load_data_nmt: num_steps INT64_MAX",
       [] { data::load_data_nmt(temp_file("hd_nmt_steps_max.txt", "go\tva\n"), kMax); }, "can be addressed"},
      {"truncate_pad: num_steps INT64_MAX", [] { data::truncate_pad(std::vector<int64_t>{1}, kMax, 0); },
       "truncate_pad: num_steps 9223372036854775807 is too large to allocate"},
      {"build_array: no <pad> in the vocabulary", [] { data::build_array(data::TokenLines{{"a"}}, data::Vocab(), 4); },
       "build_array: the vocabulary has no '<pad>' token"},
  });
}

TEST_CASE("hardening/data: padding to a length no machine holds is a qkv::Error, not std::bad_alloc") {
  if (!qkv::test::huge_allocations_fail()) return;  // see bad_input.hpp
  // One pair padded to 2⁴⁰ steps: an (1, 2⁴⁰) int64 array is 8 TiB, under the
  // address-space cap, so the allocation is tried and fails.
  check_bad_inputs({
      {"load_data_nmt: num_steps 2^40",
       [] { data::load_data_nmt(temp_file("hd_nmt_steps40.txt", "go\tva\n"), int64_t{1} << 40, 0); },
       "empty: out of memory allocating shape (1, 1099511627776) (8796093022208 bytes)"},
      {"truncate_pad: num_steps 2^40", [] { data::truncate_pad(std::vector<int64_t>{1}, int64_t{1} << 40, 0); },
       "truncate_pad: out of memory padding a line to num_steps 1099511627776 (8796093022208 bytes)"},
  });
}

TEST_CASE("hardening/data: a line quoted in an error is cut between UTF-8 characters") {
  // 59 ASCII bytes, then é (C3 A9) across bytes 60 and 61: a cut at 60 bytes
  // would end the quote on the lone lead byte C3.
  const std::string line = std::string(59, 'a') + "\xC3\xA9" + std::string(10, 'b');
  CHECK_THROWS_WITH_AS(data::tokenize_nmt(line), doctest::Contains((std::string(59, 'a') + "'").c_str()), Error);
}
