# The WebAssembly build: the `web` preset, with emscripten's toolchain
# (Debian's `emscripten`, 3.1.6). Included from CMakeLists.txt when EMSCRIPTEN.
#
# The kernels are their scalar twins (xsimd has no WebAssembly target) and run
# on one thread (a page opened from file:// gets no SharedArrayBuffer, so no
# threads). fmt, nlohmann-json and CLI11 are used as headers only: fmt with
# FMT_HEADER_ONLY (Debian's libfmt.so is a native library), and each library's
# folder alone is put on the include path, through links in the build folder,
# because -I/usr/include would put glibc's headers in front of emscripten's
# own C library.
if(NOT QKV_SCALAR_KERNELS OR QKV_THREADS)
  message(FATAL_ERROR "qkv for WebAssembly: configure with -DQKV_SCALAR_KERNELS=ON -DQKV_THREADS=OFF "
                      "(the `web` preset does)")
endif()

set(QKV_WEB_HEADERS ${CMAKE_BINARY_DIR}/system-headers)
file(MAKE_DIRECTORY ${QKV_WEB_HEADERS})
foreach(header fmt/core.h nlohmann/json.hpp CLI/CLI.hpp)
  get_filename_component(folder ${header} DIRECTORY)
  string(MAKE_C_IDENTIFIER "QKV_WEB_${folder}_ROOT" root)
  find_path(${root} ${header} PATHS /usr/include /usr/local/include /opt/homebrew/include NO_DEFAULT_PATH
            NO_CMAKE_FIND_ROOT_PATH)
  if(NOT ${root})
    message(FATAL_ERROR "qkv for WebAssembly: ${header} not found in /usr/include, /usr/local/include or "
                        "/opt/homebrew/include: install fmt, nlohmann-json and CLI11 (./qkv.sh deps), or "
                        "configure with -D${root}=<the folder that holds ${folder}/>")
  endif()
  file(CREATE_LINK ${${root}}/${folder} ${QKV_WEB_HEADERS}/${folder} SYMBOLIC)
endforeach()

add_library(fmt::fmt INTERFACE IMPORTED)
target_include_directories(fmt::fmt INTERFACE ${QKV_WEB_HEADERS})
target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY=1)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json INTERFACE ${QKV_WEB_HEADERS})
add_library(CLI11::CLI11 INTERFACE IMPORTED)
target_include_directories(CLI11::CLI11 INTERFACE ${QKV_WEB_HEADERS})

# WebAssembly's 128-bit SIMD (every browser since 2021, node 16.4): the
# compiler vectorises the scalar kernels' plain loops where no sum has to be
# reordered (gemm_rows's rows of running sums, the elementwise maps).
add_compile_options(-msimd128)

# qkv reports bad input by throwing qkv::Error, and the lessons catch it to
# print it: emscripten leaves catching out unless asked.
add_compile_options(-fexceptions)
add_link_options(-fexceptions)

# emscripten's JavaScript optimizer runs under node and requires `acorn`,
# which Debian installs in /usr/share/nodejs: Debian's node finds it there, a
# node from elsewhere only with NODE_PATH. Every link is run with it set.
if(EXISTS /usr/share/nodejs/acorn)
  set(CMAKE_CXX_LINKER_LAUNCHER ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs)
endif()
