#!/usr/bin/env bash
# qkv's one entry point: install what is missing, build, run.
#
#   ./qkv.sh lessons    install Debian packages if missing, build the lessons (Release), run every one (out/lessons/)
#   ./qkv.sh test       install Debian packages if missing, build (Release), run the whole test suite
#   ./qkv.sh sanitize   the test suite again in a build with -fsanitize=address,undefined
#   ./qkv.sh tsan       the threading tests in a build with -fsanitize=thread
#   ./qkv.sh bench      build and run the benchmark (build/release/bench; arguments go to it)
#   ./qkv.sh format     format the C++ sources with clang-format (--check: only report, exit 1 if any differ)
#   ./qkv.sh tidy       clang-tidy (.clang-tidy's checks) over src/, or the files/folders given; exit 1 on a finding
#   ./qkv.sh coverage   list public functions with no bad-input row in tests/hardening/; exit 1 if any
#   ./qkv.sh deps       name this system and the packages qkv needs on it, and how to install them
#   ./qkv.sh exercise   the exercises and their state; exercise N grades yours (N --hint, N --solution, N --reset)
#   ./qkv.sh web        the live course page, qkv compiled to WebAssembly (emscripten), in out/web/
#   ./qkv.sh web-test   the browser test of out/web/ (headless Chromium; --screenshots DIR, --time-all)
#
# Packages are installed on Debian and Ubuntu (apt). On macOS (Homebrew),
# Fedora (dnf) and Arch (pacman) it names what is missing and the command
# that installs it; elsewhere, docs/building.md says how to build by hand
# (QKV_NO_INSTALL=1 skips the package step on any system).
# Builds go to build/<preset>/ through CMake presets (CMakePresets.json).
set -euo pipefail
cd "$(dirname "$0")"

cores() {  # nproc is GNU coreutils; getconf is POSIX (macOS has it too)
  nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2
}
# Every build (the presets' workflows too) uses all cores unless told otherwise.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(cores)}"

# The system, from uname and /etc/os-release: debian (Debian, Ubuntu and
# their kin: apt), macos (Homebrew), fedora (dnf), arch (pacman), or unknown.
# QKV_OS_RELEASE and QKV_UNAME stand in for the two (the tests use them).
platform() {
  local kernel os_release="${QKV_OS_RELEASE:-/etc/os-release}" ids=""
  kernel="${QKV_UNAME:-$(uname -s)}"
  if [ "$kernel" = Darwin ]; then
    echo macos
    return
  fi
  if [ "$kernel" = Linux ] && [ -r "$os_release" ]; then
    ids=$(. "$os_release" && echo " ${ID:-} ${ID_LIKE:-} ")
  fi
  case "$ids" in
    *" debian "* | *" ubuntu "*) echo debian ;;
    *" fedora "* | *" rhel "*) echo fedora ;;
    *" arch "*) echo arch ;;
    *) echo unknown ;;
  esac
}

# What qkv needs: a C++20 compiler and CMake, and four libraries for the
# library itself; CLI11 for the lessons' flags; doctest and pugixml for the
# tests, which parse the SVG pictures back as XML. The same, by each system's
# names (docs/building.md has the versions each ships).
packages() {  # packages <platform>
  case "$1" in
    debian) echo g++ cmake make libfmt-dev doctest-dev libxsimd-dev nlohmann-json3-dev libcli11-dev libpugixml-dev ;;
    macos) echo cmake fmt xsimd nlohmann-json cli11 doctest pugixml ;;
    fedora) echo gcc-c++ cmake make fmt-devel xsimd-devel json-devel cli11-devel doctest-devel pugixml-devel ;;
    arch) echo gcc cmake make fmt xsimd nlohmann-json cli11 doctest pugixml ;;
  esac
}

installer() {  # installer <platform>: the command that installs packages there
  case "$1" in
    debian) echo "sudo apt-get install" ;;
    macos) echo "brew install" ;;
    fedora) echo "sudo dnf install" ;;
    arch) echo "sudo pacman -S --needed" ;;
  esac
}

is_installed() {  # is_installed <platform> <package>
  case "$1" in
    debian) dpkg-query -W -f='${Status}' "$2" 2>/dev/null | grep -q "install ok installed" ;;
    macos) brew list --versions "$2" >/dev/null 2>&1 ;;
    fedora) rpm -q "$2" >/dev/null 2>&1 ;;
    arch) pacman -Q "$2" >/dev/null 2>&1 ;;
  esac
}

install_missing() {  # install_missing [package …]  (default: what qkv needs, by this system's names)
  [ -z "${QKV_NO_INSTALL:-}" ] || return 0
  local os
  os=$(platform)
  if [ "$os" = unknown ]; then
    echo "qkv: unknown system ($(uname -s 2>/dev/null || echo '?')): qkv.sh installs packages on Debian and Ubuntu," >&2
    echo "qkv: and names them for macOS, Fedora and Arch. Install by hand: a C++20 compiler (g++ >= 12 or" >&2
    echo "qkv: clang >= 14), CMake >= 3.25, fmt, xsimd 8.1 to 14, nlohmann-json, CLI11, doctest and pugixml;" >&2
    echo "qkv: then run this again with QKV_NO_INSTALL=1, or build with CMake as docs/building.md says." >&2
    exit 1
  fi
  local wanted missing=()
  if [ $# -gt 0 ]; then wanted=("$@"); else read -r -a wanted <<<"$(packages "$os")"; fi
  for p in "${wanted[@]}"; do
    is_installed "$os" "$p" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "qkv: packages present ($os): ${wanted[*]}"
    return
  fi
  if [ "$os" != debian ]; then
    echo "qkv: missing on this system ($os): ${missing[*]}" >&2
    echo "qkv: install them with: $(installer "$os") ${missing[*]}" >&2
    echo "qkv: (docs/building.md, \"Other systems\"), then run this again." >&2
    exit 1
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "qkv: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "qkv: installing missing Debian packages: ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The maintainers' tools (format, tidy, coverage) are pinned to Debian 12's
# versions, so that every machine agrees: installed on Debian, required on PATH elsewhere.
need_tool() {  # need_tool <command> <Debian package>
  if [ "$(platform)" = debian ]; then
    install_missing "$2"
  elif ! command -v "$1" >/dev/null; then
    echo "qkv: needs $1 (Debian 12's package $2; CI runs it on Debian 12), which is not on PATH" >&2
    exit 1
  fi
}

lines() {  # lines <array name> <command …>: each line the command prints, into the array (bash 3 has no mapfile)
  local name=$1 line
  shift
  eval "$name=()"
  while IFS= read -r line; do eval "$name+=(\"\$line\")"; done < <("$@")
}

build() {  # build <preset> [target …]  (default: everything)
  cmake --preset "$1" >/dev/null
  local targets=() t
  for t in "${@:2}"; do targets+=(--target "$t"); done
  cmake --build --preset "$1" -j "$(cores)" ${targets[@]+"${targets[@]}"}  # (bash 3 calls an empty array unset)
}

case "${1:-}" in
  lessons)
    # The `lessons` runner runs every lesson written so far and prints a table of their times;
    # each writes its pictures, transcript.txt and results.json into out/lessons/NN_name/.
    # Only the lessons and what they link are built (target lessons_all), not the test suite.
    install_missing
    build release lessons_all
    build/release/lessons/lessons all "${@:2}"
    ;;
  test)
    install_missing
    cmake --workflow --preset release
    ;;
  sanitize)
    install_missing
    cmake --workflow --preset sanitize
    ;;
  tsan)
    # ThreadSanitizer on the tests that run threads (the tsan test preset's filter).
    install_missing
    cmake --workflow --preset tsan
    ;;
  bench)
    # Further arguments go to bench: --json, --filter NAME, --list (see README, "Speed").
    install_missing
    build release
    build/release/bench "${@:2}"
    ;;
  format)
    # Debian 12's clang-format (14), so every machine formats alike; .clang-format holds the style.
    need_tool clang-format clang-format
    lines sources git ls-files '*.cpp' '*.hpp'
    if [ "${2:-}" = "--check" ]; then
      clang-format --dry-run --Werror "${sources[@]}" || { echo "qkv: not formatted; run ./qkv.sh format" >&2; exit 1; }
      echo "qkv: ${#sources[@]} files formatted as .clang-format says"
    else
      clang-format -i "${sources[@]}"
    fi
    ;;
  tidy)
    # Debian 12's clang-tidy (14), with the flags of the Release build: the
    # configure step writes build/release/compile_commands.json.
    install_missing  # configuring the build needs the libraries too
    need_tool run-clang-tidy clang-tidy
    cmake --preset release >/dev/null
    paths=("${@:2}")
    [ ${#paths[@]} -gt 0 ] || paths=(src)
    lines sources git ls-files -- "${paths[@]}"
    cpp=()
    for f in "${sources[@]}"; do [[ "$f" != *.cpp ]] || cpp+=("$f"); done
    sources=("${cpp[@]}")
    [ ${#sources[@]} -gt 0 ] || { echo "qkv: no .cpp files under: ${paths[*]}" >&2; exit 2; }
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    # run-clang-tidy takes regexes on the database's absolute paths.
    # It colours its output and echoes each command: keep the findings.
    run-clang-tidy -p build/release -j "$(cores)" -quiet "${sources[@]/#/^$PWD/}" 2>&1 |
      sed 's/\x1b\[[0-9;]*m//g' | grep -v -e '^clang-tidy' -e '^[0-9]* warnings\? generated\.$' \
        -e '^Suppressed [0-9]* warnings' -e '^Use -header-filter' -e '^Running clang-tidy for' | tee "$log" || true
    # A header's finding is reported once per file that includes it: count each once.
    found=$( (grep -E '^/.*: (warning|error):' "$log" || true) | sort -u | wc -l)
    if [ "$found" -gt 0 ]; then
      echo "qkv: clang-tidy: $found findings in ${#sources[@]} files" >&2
      exit 1
    fi
    echo "qkv: clang-tidy: ${#sources[@]} files, nothing found"
    ;;
  coverage)
    # Universal Ctags reads the public headers without compiling them; the
    # script (standard library only) matches each function to a table row.
    need_tool ctags universal-ctags
    need_tool python3 python3
    /usr/bin/python3 tools/hardening_coverage.py
    ;;
  deps)
    os=$(platform)
    echo "qkv: this system: $os"
    if [ "$os" = unknown ]; then
      echo "qkv: not one qkv.sh knows (Debian, Ubuntu, macOS, Fedora, Arch): docs/building.md says how to build by hand"
    else
      echo "qkv: qkv needs: $(packages "$os")"
      echo "qkv: install with: $(installer "$os") $(packages "$os")"
    fi
    ;;
  exercise)
    # ./qkv.sh exercise                 every exercise and its state (out/exercises/progress.json)
    # ./qkv.sh exercise N [flags]       builds lessons/exercises/NN_name.cpp alone and grades it
    #                                   (flags: --seed S replays a grading's random cases, --seconds S)
    # ./qkv.sh exercise N --hint        the next hint (--hint N too: the order does not matter)
    # ./qkv.sh exercise N --solution    says it is a spoiler; N --solution --yes prints it
    # ./qkv.sh exercise N --reset       the blank back (your version kept in out/exercises/NN/kept/, numbered)
    # The first call builds libqkv and the grader (minutes); after that only your file is compiled.
    install_missing
    tool=build/release/lessons/exercises/exercises
    [ -f build/release/libqkv.a ] || echo "qkv: the first exercise builds libqkv and the grader once (a few minutes)"
    cmake --preset release >/dev/null
    cmake --build --preset release -j "$(cores)" --target qkv_exercises_tool >/dev/null
    # The exercise's number, the action (--hint, --solution, --reset) and the
    # other flags, in any order; a grader flag's value is not the number.
    n="" action="" rest=()
    args=("${@:2}")
    for ((i = 0; i < ${#args[@]}; i++)); do
      a="${args[$i]}"
      case "$a" in
        --hint | --solution | --reset) action="${a#--}" ;;
        --seed | --seconds | --out | --color | --root)
          rest+=("$a")
          if [ $((i + 1)) -lt ${#args[@]} ]; then
            i=$((i + 1))
            rest+=("${args[$i]}")
          fi
          ;;
        *) if [ -z "$n" ] && [[ "$a" != -* ]]; then n="$a"; else rest+=("$a"); fi ;;
      esac
    done
    if [ -n "$action" ]; then
      exec "$tool" "$action" ${n:+"$n"} ${rest[@]+"${rest[@]}"}
    elif [ -z "$n" ] && [ ${#rest[@]} -eq 0 ]; then
      exec "$tool"
    fi
    if ! [[ "$n" =~ ^[0-9]+$ ]] || ! compgen -G "lessons/exercises/blanks/$(printf %02d "$((10#$n))")_*.cpp" >/dev/null; then
      "$tool" hint "${n:-?}" >/dev/null || true  # says which numbers there are
      exit 2
    fi
    nn=$(printf %02d "$((10#$n))")
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    start=$(date +%s)
    if ! cmake --build --preset release -j "$(cores)" --target "exercise_$nn" >"$log" 2>&1; then
      grep -v -e '^\[ *[0-9]*%\]' -e '^gmake' -e '^make' "$log" >&2
      echo "qkv: lessons/exercises/${nn}_*.cpp does not compile (above); fix it and run ./qkv.sh exercise $n again" >&2
      exit 1
    fi
    # The compiler's warnings about the learner's file (an unused parameter is often the mistake):
    # each message that names the file, with the lines of code under it (they start with a space);
    # not the build's progress, nor a message about another file.
    warnings=$(awk -v mine="exercises/${nn}_" '/^[^ ]/ { show = index($0, mine) > 0 && /: (warning|note): |: In / } show' "$log")
    if grep -q ": warning: " <<<"$warnings"; then
      echo "qkv: the compiler warns about your file (a warning often points at the mistake):"
      echo "$warnings"
    fi
    echo "qkv: built exercise_$nn in $(($(date +%s) - start)) s"
    build/release/lessons/exercises/exercise_"$nn" ${rest[@]+"${rest[@]}"}
    ;;
  web)
    # The live course page (docs/web.md). Lessons 08 and 11 train natively first, if their
    # models are not in out/same/ yet (the page's translation boxes use them); then qkv and
    # every lesson are built with emscripten (build/web/) and assembled in out/web/.
    install_missing
    if [ "$(platform)" = debian ]; then
      install_missing emscripten
    elif ! command -v emcc >/dev/null; then
      echo "qkv: ./qkv.sh web needs emscripten (emcc on PATH; docs/web.md)" >&2
      exit 1
    fi
    build release lessons_all
    # The translation boxes' models come from the same-numbers build (the `same` preset), whose
    # floats are the page's: the box translates as the page's own run of the lesson does.
    build same 08_seq2seq_attention 11_transformer
    for lesson in 08_seq2seq_attention 11_transformer; do
      [ -f "out/same/$lesson/model.safetensors" ] || build/same/lessons/$lesson --out "out/same/$lesson" >/dev/null
    done
    cmake --preset web -DQKV_WEB_MODELS="$PWD/out/same" >/dev/null
    build web web_page
    ;;
  web-test)
    # The browser test (web/test/browser_test.js) on the page ./qkv.sh web assembled: the
    # native lessons 04, 07 and 09 run first, for the numbers the page must print. Further
    # arguments go to the test: --screenshots DIR, --time-all build/release/lessons.
    [ -f out/web/index.html ] || { echo "qkv: no out/web/index.html: run ./qkv.sh web first" >&2; exit 1; }
    if [ "$(platform)" = debian ]; then
      # fonts-noto-cjk: the notes' Chinese section names, in the screenshots too (not empty boxes).
      install_missing chromium fonts-noto-cjk
      command -v npm >/dev/null || install_missing npm
    fi
    for lesson in 04_scoring_functions 07_self_attention 09_multi_head_attention; do
      build/release/lessons/$lesson >/dev/null
    done
    (cd web/test && npm ci --no-audit --no-fund --loglevel=error)
    node web/test/browser_test.js --page out/web/index.html --native out/lessons --models out/same "${@:2}"
    ;;
  *)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
