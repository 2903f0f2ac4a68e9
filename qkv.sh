#!/usr/bin/env bash
# qkv's one entry point: install what is missing, build, run.
#
#   ./qkv.sh lessons    install Debian packages if missing, build the lessons (Release), run every one (out/lessons/)
#   ./qkv.sh test       install Debian packages if missing, build (Release), run the whole test suite
#   ./qkv.sh sanitize   the test suite again in a build with -fsanitize=address,undefined
#   ./qkv.sh bench      build and run the benchmark (build/release/bench; arguments go to it)
#   ./qkv.sh format     format the C++ sources with clang-format (--check: only report, exit 1 if any differ)
#   ./qkv.sh tidy       clang-tidy (.clang-tidy's checks) over src/, or the files/folders given; exit 1 on a finding
#   ./qkv.sh coverage   list public functions with no bad-input row in tests/hardening/; exit 1 if any
#   ./qkv.sh exercise   the exercises and their state; exercise N grades yours (N --hint, N --solution, --reset N)
#
# Builds go to build/<preset>/ through CMake presets (CMakePresets.json).
set -euo pipefail
cd "$(dirname "$0")"
# Every build (the presets' workflows too) uses all cores unless told otherwise.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

# What qkv needs from Debian: a compiler and CMake, and four libraries for the
# library itself; CLI11 for the lessons' flags; pugixml for the tests, which
# parse the SVG pictures back as XML.
PACKAGES=(g++ cmake make libfmt-dev doctest-dev libxsimd-dev nlohmann-json3-dev libcli11-dev libpugixml-dev)

install_missing() {  # install_missing [package …]  (default: PACKAGES)
  local wanted=("${@:-${PACKAGES[@]}}")
  local missing=()
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "qkv: Debian packages present: ${wanted[*]}"
    return
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

build() {  # build <preset> [target …]  (default: everything)
  cmake --preset "$1" >/dev/null
  local targets=()
  for t in "${@:2}"; do targets+=(--target "$t"); done
  cmake --build --preset "$1" -j "$(nproc)" "${targets[@]}"
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
  bench)
    # Further arguments go to bench: --json, --filter NAME, --list (see README, "Speed").
    install_missing
    build release
    build/release/bench "${@:2}"
    ;;
  format)
    # Debian 12's clang-format (14), so every machine formats alike; .clang-format holds the style.
    install_missing clang-format
    mapfile -t sources < <(git ls-files '*.cpp' '*.hpp')
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
    install_missing "${PACKAGES[@]}" clang-tidy  # configuring the build needs the libraries too
    cmake --preset release >/dev/null
    paths=("${@:2}")
    [ ${#paths[@]} -gt 0 ] || paths=(src)
    mapfile -t sources < <(git ls-files -- "${paths[@]}" | grep '\.cpp$')
    [ ${#sources[@]} -gt 0 ] || { echo "qkv: no .cpp files under: ${paths[*]}" >&2; exit 2; }
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    # run-clang-tidy takes regexes on the database's absolute paths.
    # It colours its output and echoes each command: keep the findings.
    run-clang-tidy -p build/release -j "$(nproc)" -quiet "${sources[@]/#/^$PWD/}" 2>&1 |
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
    install_missing universal-ctags python3
    /usr/bin/python3 tools/hardening_coverage.py
    ;;
  exercise)
    # ./qkv.sh exercise                 every exercise and its state (out/exercises/progress.json)
    # ./qkv.sh exercise N [flags]       builds lessons/exercises/NN_name.cpp alone and grades it
    # ./qkv.sh exercise N --hint        the next hint; N --solution the reference solution
    # ./qkv.sh exercise --reset N       the blank back (your version kept in out/exercises/NN/)
    # The first call builds libqkv and the grader (minutes); after that only your file is compiled.
    install_missing
    tool=build/release/lessons/exercises/exercises
    [ -f build/release/libqkv.a ] || echo "qkv: the first exercise builds libqkv and the grader once (a few minutes)"
    cmake --preset release >/dev/null
    cmake --build --preset release -j "$(nproc)" --target qkv_exercises_tool >/dev/null
    args=("${@:2}")
    if [ ${#args[@]} -eq 0 ]; then
      exec "$tool"
    elif [ "${args[0]}" = "--reset" ]; then
      exec "$tool" reset "${args[@]:1}"
    elif [ ${#args[@]} -ge 2 ] && [ "${args[1]}" = "--reset" ]; then
      exec "$tool" reset "${args[0]}" "${args[@]:2}"
    elif [ ${#args[@]} -ge 2 ] && [ "${args[1]}" = "--hint" ]; then
      exec "$tool" hint "${args[0]}" "${args[@]:2}"
    elif [ ${#args[@]} -ge 2 ] && [ "${args[1]}" = "--solution" ]; then
      exec "$tool" solution "${args[0]}" "${args[@]:2}"
    fi
    n="${args[0]}"
    if ! [[ "$n" =~ ^[0-9]+$ ]] || ! compgen -G "lessons/exercises/blanks/$(printf %02d "$((10#$n))")_*.cpp" >/dev/null; then
      "$tool" solution "$n" >/dev/null || true  # says which numbers there are
      exit 2
    fi
    nn=$(printf %02d "$((10#$n))")
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    start=$(date +%s)
    if ! cmake --build --preset release -j "$(nproc)" --target "exercise_$nn" >"$log" 2>&1; then
      grep -v -e '^\[ *[0-9]*%\]' -e '^gmake' -e '^make' "$log" >&2
      echo "qkv: lessons/exercises/${nn}_*.cpp does not compile (above); fix it and run ./qkv.sh exercise $n again" >&2
      exit 1
    fi
    echo "qkv: built exercise_$nn in $(($(date +%s) - start)) s"
    build/release/lessons/exercises/exercise_"$nn" "${args[@]:1}"
    ;;
  *)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
