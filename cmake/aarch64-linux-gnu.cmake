# A cross build for 64-bit ARM Linux on a Debian x86-64 machine, with Debian's
# cross compiler and the arm64 libraries of its multiarch (.ci/run installs
# both: docs/building.md, "ARM64"):
#
#   cmake -S . -B build/arm64 --toolchain cmake/aarch64-linux-gnu.cmake
#
# The programs run under qemu-user with -L / (the arm64 C library of the
# multiarch, the one they were linked against); ctest runs them so.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Libraries and CMake packages in /usr/lib/aarch64-linux-gnu; headers of the
# header-only ones in /usr/include, shared by every architecture.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
