// The textual headers nearly every test file includes, parsed once for all the suites instead of
// once per file: `target_precompile_headers` in tests/CMakeLists.txt puts this precompiled header
// before each test file's first line. Only headers that most files include belong here: a test file
// still includes what it uses (this list may change), and a header used by a few files would cost
// the others its declarations' merge with the modules' copies. tests/README.md, "Suite time", gives
// the CPU seconds it saves.
// Not fmt: clang 19 then fails to find fmt's own `detail::find` when a file that imports sgmcmc
// (whose module units include fmt too) formats a string. A like header for the CLI (CLI11,
// nlohmann::json, fmt, standard headers) failed the same way, and without fmt on std::variant's
// hash, so the CLI has none; these headers merge with the modules' copies without trouble.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
