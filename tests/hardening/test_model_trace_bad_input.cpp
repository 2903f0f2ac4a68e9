// Bad input to nn::trace and to the pictures of a traced model
// (viz/model_summary.hpp): a trace inside a trace, no forward, an empty or
// malformed trace, a depth out of range, a note that is empty or has no call.
#include "hardening/bad_input.hpp"

#include <filesystem>

using namespace qkv;

TEST_CASE("hardening: nn::trace and the model pictures") {
  auto lin = std::make_shared<nn::Linear>(2, 2);
  viz::ModelTrace one = nn::trace(*lin, [=] { (*lin)(randn({1, 2})); });
  viz::ModelTrace broken = one;
  broken.calls.push_back({"x", "Linear", "", 3, 1, {}, {}, 0, true});
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "qkv_hardening_model.svg";
  test::check_bad_inputs({
      {"trace: a trace inside a trace", [=] { nn::trace(*lin, [=] { nn::trace(*lin, [] {}); }); },
       "nn::trace: a trace of this thread is already running; traces do not nest"},
      {"trace: no forward", [=] { nn::trace(*lin, nullptr); }, "nn::trace: no forward to run for Linear"},
      {"trace_note: an empty note", [=] { nn::trace_note(*lin, ""); }, "nn::trace_note: an empty note for Linear"},
      {"trace_note: a module that has not run",
       [=] {
         auto other = std::make_shared<nn::Linear>(2, 2);
         nn::trace(*lin, [=] { nn::trace_note(*other, "causal mask"); });
       },
       "nn::trace_note: Linear has not run in this trace: no call to note \"causal mask\" on"},
      {"model_summary: an empty trace", [] { viz::model_summary(viz::ModelTrace{}); },
       "model_summary: the trace has no calls (make it with nn::trace)"},
      {"model_summary: depth -1", [=] { viz::model_summary(one, -1); }, "model_summary: depth -1 must be at least 0"},
      {"model_summary: a call whose parent comes after it", [=] { viz::model_summary(broken); },
       "model_summary: call 1 (Linear) has parent 3, which is not an earlier call"},
      {"model_svg: an empty trace", [] { viz::model_svg(viz::ModelTrace{}); }, "model_svg: the trace has no calls"},
      {"model_svg: depth 0", [=] { viz::model_svg(one, {.depth = 0}); }, "model_svg: depth 0 must be at least 1"},
      {"save_model_svg: an empty trace", [=] { viz::save_model_svg(file, viz::ModelTrace{}); },
       "model_svg: the trace has no calls"},
  });
  CHECK_FALSE(std::filesystem::exists(file));
}
