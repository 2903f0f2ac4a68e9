// The live panels in the page: run_panel (panels.hpp) exported from the
// WebAssembly module as qkv_panel, which the page calls through
// cwrap("qkv_panel", "string", ["string"]) on every turn of a knob.
#include <emscripten.h>

#include <string>

#include "panels.hpp"

// The answer lives until the next call; cwrap copies it into a JavaScript
// string at once.
extern "C" EMSCRIPTEN_KEEPALIVE const char* qkv_panel(const char* request) {
  static std::string answer;
  answer = qkv::web::run_panel(request ? request : "");
  return answer.c_str();
}
