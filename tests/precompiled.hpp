// The textual headers nearly every test file includes, parsed once per test executable instead of
// once per file: `target_precompile_headers` in tests/CMakeLists.txt puts this precompiled header
// before each test file's first line. Only headers that most files include belong here: a test file
// still includes what it uses (this list may change), and a header used by a few files would cost
// the others its declarations' merge with the modules' copies. tests/README.md, "Suite time", gives
// the CPU seconds it saves.
// Not fmt: clang 19 then fails to find fmt's own `detail::find` when a file that imports sgmcmc
// (whose module units include fmt too) formats a string; the standard headers, Catch2, CLI11 and
// nlohmann::json merge with the modules' copies without trouble.
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
