# A ctest test of qkv as a dependency: a project of the user's own (the
# examples/ folders) configures, builds and runs against qkv, one way or the
# other. Run as `cmake -D… -P consumer_test.cmake` (CMakeLists.txt adds the
# tests `install.find_package` and `install.add_subdirectory`):
#
#   MODE=find_package      cmake --install this build into a fresh prefix, then
#                          build examples/custom_layer with -DCMAKE_PREFIX_PATH=<prefix>
#   MODE=add_subdirectory  build examples/add_subdirectory, which compiles qkv's
#                          library inside itself with add_subdirectory
#
# Both then run the example (it fails unless its loss falls), and check from
# compile_commands.json that qkv's flags (-march=native, -Werror) stayed on
# qkv's own sources and did not reach the user's.
#
# In: MODE, QKV_SOURCE_DIR, QKV_BINARY_DIR, WORK_DIR, CXX_COMPILER, BUILD_TYPE,
#     WARNINGS (the user's own flags), NATIVE_FLAG (-march=native, -mcpu=native,
#     or empty when QKV_NATIVE is OFF), SANITIZE.
cmake_minimum_required(VERSION 3.25)

function(run)  # run(<command …>): echo it, run it, stop the test if it fails
  string(JOIN " " line ${ARGN})
  message(STATUS "$ ${line}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${line}")
  endif()
endfunction()

set(build ${WORK_DIR}/build)
set(configure ${CMAKE_COMMAND} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
              -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
set(user_flags "${WARNINGS}")

if(MODE STREQUAL "find_package")
  # A fresh prefix every time, so a header or file the install forgets cannot
  # be found left over from an earlier run.
  file(REMOVE_RECURSE ${WORK_DIR})
  run(${CMAKE_COMMAND} --install ${QKV_BINARY_DIR} --prefix ${WORK_DIR}/prefix)
  if(SANITIZE)  # libqkv.a is instrumented: the program must link the sanitizer runtimes
    string(APPEND user_flags " -fsanitize=address,undefined")
    list(APPEND configure -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined)
  endif()
  run(${configure} -S ${QKV_SOURCE_DIR}/examples/custom_layer -B ${build} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
      "-DCMAKE_CXX_FLAGS=${user_flags}")
elseif(MODE STREQUAL "add_subdirectory")
  # The build directory is kept between runs, so a second run only compiles
  # what changed (a clean clone, as in CI, always starts from nothing).
  run(${configure} -S ${QKV_SOURCE_DIR}/examples/add_subdirectory -B ${build} -DQKV_SOURCE_DIR=${QKV_SOURCE_DIR}
      "-DCMAKE_CXX_FLAGS=${user_flags}")
else()
  message(FATAL_ERROR "MODE must be find_package or add_subdirectory, not '${MODE}'")
endif()
run(${CMAKE_COMMAND} --build ${build} -j2)
run(${build}/custom_layer)

# The user's main.cpp is compiled with the user's flags alone; qkv's own
# sources (compiled here only through add_subdirectory) with qkv's.
file(READ ${build}/compile_commands.json commands)
string(JSON count LENGTH "${commands}")
math(EXPR last "${count} - 1")
set(seen_qkv OFF)
foreach(i RANGE ${last})
  string(JSON file GET "${commands}" ${i} file)
  string(JSON command GET "${commands}" ${i} command)
  if(file MATCHES "examples/custom_layer/main.cpp$")
    foreach(flag -march=native -mcpu=native -Werror -Wshadow=local -ffp-contract=off)
      string(FIND "${command}" "${flag}" at)
      if(at GREATER -1 AND NOT user_flags MATCHES "${flag}")
        message(FATAL_ERROR "qkv's ${flag} reached the user's program: ${command}")
      endif()
    endforeach()
  elseif(file MATCHES "/src/.*\\.cpp$")
    set(seen_qkv ON)
    if(NATIVE_FLAG AND NOT command MATCHES "${NATIVE_FLAG}")
      message(FATAL_ERROR "qkv's own source lost ${NATIVE_FLAG}: ${command}")
    endif()
  endif()
endforeach()
if(MODE STREQUAL "add_subdirectory")
  if(NOT seen_qkv)
    message(FATAL_ERROR "no qkv source in ${build}/compile_commands.json")
  endif()
  # Only the library: no tests, lessons or benchmarks of qkv in a user's build.
  file(GLOB extras ${build}/qkv/qkv_tests ${build}/qkv/bench_* ${build}/qkv/lessons/*)
  if(extras)
    message(FATAL_ERROR "qkv built more than its library inside the user's project: ${extras}")
  endif()
endif()
message(STATUS "qkv as a dependency (${MODE}): built, ran, flags kept apart")
