// d2l's toy regression data for attention pooling (lessons 01–03), made in
// one place so the three lessons see the same points:
//
//   y = f(x) + ε,   f(x) = 2 sin(x) + x^0.8,   ε ~ N(0, 0.5²)
//   training x: n_train draws from U[0, 5), sorted;   test x: 0, 0.1, …, 4.9
//
// The noise is drawn after the x, both from the lesson's seeded Generator.
#pragma once
#include <qkv/qkv.hpp>

namespace qkv::lesson {

struct ToyData {
  Tensor x_train, y_train;  // (n_train), (n_train): the keys and the values
  Tensor x_test, y_truth;   // (50), (50): the queries and the noiseless f(x_test)
};

float toy_f(float x);  // 2 sin(x) + x^0.8
ToyData toy_data(int64_t n_train, Generator& gen);

}  // namespace qkv::lesson
