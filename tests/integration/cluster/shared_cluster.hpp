#pragma once
// One three-master cluster (testing/local_cluster) per test suite, shared by its cases: a
// cluster takes seconds to start, a case milliseconds.

#include <redcoord/testing/local_cluster.hpp>

#include <gtest/gtest.h>

#include <memory>

namespace cluster_test {

class shared_cluster : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        cluster_ = std::make_unique<redcoord::testing::local_cluster>();
    }
    static void TearDownTestSuite() { cluster_.reset(); }
    static redcoord::testing::local_cluster& cluster() { return *cluster_; }

private:
    static inline std::unique_ptr<redcoord::testing::local_cluster> cluster_;
};

}  // namespace cluster_test
