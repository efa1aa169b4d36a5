#pragma once
// The one fixture of issue 34's cases (issue34_cli_test.cpp, issue34_output_cli_test.cpp), so
// that all of them form the suite `Cli` the issue names its tests in. GoogleTest refuses one
// suite name over two fixture classes, so it is defined once, here, outside any anonymous
// namespace.
#include "cli_harness.hpp"

namespace cli_test {

struct Cli : ::testing::Test {
    temp_dir dir;
};

}  // namespace cli_test
