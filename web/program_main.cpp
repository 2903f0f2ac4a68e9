// main of every program in the WebAssembly build (lessons/CMakeLists.txt),
// around the program's own main, compiled there as qkv_program_main.
//
// Natively an exception nothing catches ends in std::terminate, where a
// lesson's terminate handler names the error, marks its folder unfinished
// and exits with status 1. In emscripten's exception handling an uncaught
// exception instead leaves the WebAssembly as a bare pointer, and the handler
// never runs: so it is caught here and handed to std::terminate, inside the
// catch, where std::current_exception() is still the program's error.
#include <exception>

int qkv_program_main(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    return qkv_program_main(argc, argv);
  } catch (...) {
    std::terminate();
  }
}
