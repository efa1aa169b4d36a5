// Holder labels (core/holder_label.hpp): the token form, the default, and bad labels.
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

using namespace redcoord;

TEST(HolderLabel, DefaultIsHostColonPid) {
    const auto l = default_holder_label();
    const auto suffix = ":" + std::to_string(::getpid());
    ASSERT_GT(l.size(), suffix.size());
    EXPECT_EQ(l.substr(l.size() - suffix.size()), suffix);
    EXPECT_EQ(resolve_holder_label(std::nullopt), l);
    EXPECT_EQ(resolve_holder_label(std::string()), "");
    EXPECT_EQ(resolve_holder_label(std::string("worker 7")), "worker 7");
}

TEST(HolderLabel, TokenCarriesTheLabelAfterItsRandomPart) {
    const auto t = labelled_token("api:42 / eu-west");
    EXPECT_EQ(t.size(), 40u + 1u + 16u);
    EXPECT_EQ(t[40], '/');
    EXPECT_EQ(holder_label_of(t), "api:42 / eu-west");
    EXPECT_NE(labelled_token("a"), labelled_token("a"));  // still unguessable and unique
    const auto bare = labelled_token("");
    EXPECT_EQ(bare.size(), 40u);
    EXPECT_EQ(holder_label_of(bare), "");
}

TEST(HolderLabel, ValuesNotMadeByUsShowNoLabel) {
    EXPECT_EQ(holder_label_of(""), "");
    EXPECT_EQ(holder_label_of("my-token"), "");
    EXPECT_EQ(holder_label_of(std::string(40, 'a') + "/"), "");   // nothing after
    EXPECT_EQ(holder_label_of(std::string(40, 'A') + "/x"), "");  // not lower hex
    EXPECT_EQ(holder_label_of(std::string(41, 'a') + "/x"), "");  // separator misplaced
    EXPECT_EQ(holder_label_of(std::string(40, 'f') + "/x/y"), "x/y");
}

TEST(HolderLabel, LongOrMultiLineLabelsAreRefused) {
    EXPECT_THROW((void)resolve_holder_label(std::string(max_holder_label + 1, 'x')),
                 invalid_argument);
    EXPECT_NO_THROW((void)resolve_holder_label(std::string(max_holder_label, 'x')));
    EXPECT_THROW((void)resolve_holder_label(std::string("a\rb")), invalid_argument);
    EXPECT_THROW((void)resolve_holder_label(std::string("a\nb")), invalid_argument);
    EXPECT_THROW((void)resolve_holder_label(std::string("a\0b", 3)), invalid_argument);
}
