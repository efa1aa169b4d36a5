#pragma once
// One three-master cluster (testing/local_cluster) per test suite, shared by its cases: a
// cluster takes seconds to start, a case milliseconds.

#include <redcoord/testing/local_cluster.hpp>

#include <gtest/gtest.h>

#include <memory>

namespace cluster_test {

class shared_cluster : public ::testing::Test {
protected:
    // Made by the first test's SetUp(), not SetUpTestSuite(): GoogleTest reports the tests of
    // a suite whose SetUpTestSuite() failed as skipped, and ctest then counts them as such, so
    // a cluster that did not come up would pass unnoticed; a SetUp() that throws fails its test.
    void SetUp() override {
        if (!cluster_) cluster_ = std::make_unique<redcoord::testing::local_cluster>();
    }
    static void TearDownTestSuite() { cluster_.reset(); }
    static redcoord::testing::local_cluster& cluster() { return *cluster_; }

private:
    static inline std::unique_ptr<redcoord::testing::local_cluster> cluster_;
};

}  // namespace cluster_test
