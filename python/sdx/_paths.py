"""Where the installed package keeps what C and C++ programs build against.

The `sdx` package folder is also a CMake prefix (CMakeLists.txt, "Install layout"):

    sdx/include/sdx/sdx.h               the C++ API (sdx_runtime_c.h: the C ABI)
    sdx/lib/libsdx.so                   the engine (its dependencies bundled in sdx_runtime.libs/ by the wheel)
    sdx/lib/cmake/sdx/sdxConfig.cmake   find_package(sdx) -> imported target sdx::sdx
    sdx/bin/sdx-serve                   the gRPC server `sdx serve` runs (sdx.serve.find_server())

As pybind11 and nanobind do, get_cmake_dir() is the folder of the config file, for -Dsdx_DIR=... or
CMAKE_PREFIX_PATH:

    cmake -S . -B build -DCMAKE_PREFIX_PATH="$(python3 -m sdx._paths --cmake-dir)"

A source checkout's build tree (build/wheel/python) has no include/ or lib/: these exist in an
installed package only.
"""

import argparse
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def get_include() -> str:
    """The folder to put on the include path: #include "sdx/sdx.h" (or "sdx/sdx_runtime_c.h") from it."""
    return os.path.join(_PACKAGE_DIR, "include")


def get_lib_dir() -> str:
    """The folder of libsdx.so."""
    return os.path.join(_PACKAGE_DIR, "lib")


def get_cmake_dir() -> str:
    """The folder of sdxConfig.cmake: a value for sdx_DIR or CMAKE_PREFIX_PATH."""
    return os.path.join(_PACKAGE_DIR, "lib", "cmake", "sdx")


def main(argv=None) -> int:
    """python3 -m sdx._paths --cmake-dir | --include | --lib-dir: prints the folder."""
    p = argparse.ArgumentParser(prog="python3 -m sdx._paths", description=main.__doc__)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--cmake-dir", action="store_true", help="the folder of sdxConfig.cmake (find_package(sdx))")
    g.add_argument("--include", action="store_true", help="the include folder (sdx/sdx.h, sdx/sdx_runtime_c.h)")
    g.add_argument("--lib-dir", action="store_true", help="the folder of libsdx.so")
    args = p.parse_args(argv)
    print(get_cmake_dir() if args.cmake_dir else get_include() if args.include else get_lib_dir())
    return 0


if __name__ == "__main__":
    sys.exit(main())
