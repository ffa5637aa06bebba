// Issue 31, asynchronous waits: deadlines kept, every callback once,
// teardown from any callback.
#include <gtest/gtest.h>

#include "outcomes.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

}  // namespace
}  // namespace fairlock::test
