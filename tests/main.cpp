// The one doctest main for qkv_tests; every other file under tests/ only adds TEST_CASEs.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
