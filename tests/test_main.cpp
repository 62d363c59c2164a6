// The doctest runner: every tests/test_*.cpp registers its cases here.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
