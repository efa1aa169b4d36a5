// Every script of every part loads on a real server (SCRIPT LOAD), as the library sends it
// (fragments prepended) and in its Cluster form, and every script file is one of them.
#include "election_scripts.hpp"
#include "fair_scripts.hpp"
#include "job_scripts.hpp"
#include "limit_scripts.hpp"
#include "lua_files.hpp"
#include "reliable_scripts.hpp"
#include "scripts.hpp"
#include "signaling_scripts.hpp"

#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <map>

using namespace redcoord;

namespace {

std::map<std::string, std::vector<const script*>> scripts_by_part() {
    return {{"lock", detail::lock_scripts()},           {"election", detail::election_scripts()},
            {"signaling", detail::signaling_scripts()}, {"queue", detail::queue_scripts()},
            {"limit", detail::limit_scripts()},         {"jobs", detail::jobs_scripts()}};
}

TEST(Scripts, EveryScriptLoadsOnARealServerWithTheHashTheLibrarySends) {
    redcoord::testing::local_server srv;
    std::size_t loaded = 0;
    for (const auto& [part, scripts] : scripts_by_part()) {
        for (const script* s : scripts) {
            for (const script* form : {s, &s->for_cluster(true)}) {
                SCOPED_TRACE(part + ": " + form->source().substr(0, 120));
                const reply r = srv.command({"SCRIPT", "LOAD", form->source()});
                ASSERT_FALSE(r.is_error()) << r.text();
                EXPECT_EQ(r.text(), form->sha1());
                ++loaded;
            }
        }
    }
    EXPECT_GE(loaded, 60u);
}

TEST(Scripts, EveryScriptFileIsOneTheLibraryRuns) {
    // A file that no part's list names would be neither loaded above nor in the ACL rules.
    std::map<std::string, std::size_t> files;
    for (const auto& f : redcoord::testing::read_lua_files(REDCOORD_SOURCE_DIR))
        if (!f.fragment) ++files[f.part];
    for (const auto& [part, scripts] : scripts_by_part())
        EXPECT_EQ(files[part], scripts.size()) << part;
}

}  // namespace
