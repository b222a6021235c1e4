// LOOM_* configuration parsing: every variable, every malformed value rejected by name.
#include <loom/plugins/config.hpp>
#include <loom/plugins/engine.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>
#include <string>

namespace {

using loom::plugins::config;

auto parse(std::map<std::string, std::string> env) {
    return config::from([&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    });
}

TEST(PluginConfig, DefaultsWhenNothingIsSet) {
    auto c = parse({});
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->provider.empty());
    EXPECT_TRUE(c->iface.empty());
    EXPECT_FALSE(c->eager_max.has_value());
    EXPECT_EQ(c->eagain_timeout.count(), 10000);
    EXPECT_EQ(c->peer_timeout.count(), 5000);
    EXPECT_EQ(c->connect_timeout.count(), 60000);
    EXPECT_FALSE(c->progress_thread);
    EXPECT_EQ(c->liveness_endpoint, loom::plugins::tristate::automatic);
    EXPECT_FALSE(c->mr_cache_entries.has_value());
    EXPECT_EQ(c->cq_size, 4096U);
    EXPECT_EQ(c->hmem, loom::plugins::tristate::automatic);
    EXPECT_EQ(c->flush, loom::plugins::tristate::automatic);
}

TEST(PluginConfig, ReadsEveryVariable) {
    auto c = parse({{"LOOM_PROVIDER", "tcp;ofi_rxm"},
                    {"LOOM_IFACE", "eth0,eth1"},
                    {"LOOM_EAGER_MAX", "32k"},
                    {"LOOM_EAGAIN_TIMEOUT_MS", "250"},
                    {"LOOM_PEER_TIMEOUT_MS", "1500"},
                    {"LOOM_CONNECT_TIMEOUT_MS", "9000"},
                    {"LOOM_PROGRESS_THREAD", "1"},
                    {"LOOM_LIVENESS_ENDPOINT", "0"},
                    {"LOOM_LOG_LEVEL", "debug"},
                    {"LOOM_MR_CACHE_ENTRIES", "4096"},
                    {"LOOM_CQ_SIZE", "8"},
                    {"LOOM_HMEM", "0"},
                    {"LOOM_FLUSH", "1"}});
    ASSERT_TRUE(c) << config::last_error();
    EXPECT_EQ(c->hmem, loom::plugins::tristate::off);
    EXPECT_EQ(c->flush, loom::plugins::tristate::on);
    EXPECT_EQ(parse({{"LOOM_HMEM", "auto"}})->hmem, loom::plugins::tristate::automatic);
    EXPECT_EQ(parse({{"LOOM_HMEM", "yes"}})->hmem, loom::plugins::tristate::on);
    EXPECT_EQ(c->provider, "tcp;ofi_rxm");
    EXPECT_EQ(c->iface, "eth0,eth1");
    EXPECT_EQ(c->eager_max, 32768U);
    EXPECT_EQ(c->eagain_timeout.count(), 250);
    EXPECT_EQ(c->peer_timeout.count(), 1500);
    EXPECT_EQ(c->connect_timeout.count(), 9000);
    EXPECT_TRUE(c->progress_thread);
    EXPECT_EQ(c->liveness_endpoint, loom::plugins::tristate::off);
    EXPECT_EQ(parse({{"LOOM_LIVENESS_ENDPOINT", "1"}})->liveness_endpoint, loom::plugins::tristate::on);
    EXPECT_EQ(c->log_level, "debug");
    EXPECT_EQ(c->mr_cache_entries, 4096U);
    EXPECT_EQ(c->cq_size, 8U);
    EXPECT_EQ(parse({{"LOOM_MR_CACHE_ENTRIES", "0"}})->mr_cache_entries, 0U);  // set to none, not unset
}

TEST(PluginConfig, IdleRegistrationsAreKeptOnlyWhereTheProviderDoesNotPinPages) {
    const auto all = std::numeric_limits<std::size_t>::max();
    config c;
    EXPECT_EQ(loom::plugins::idle_registrations_kept(c, false), all);
    EXPECT_EQ(loom::plugins::idle_registrations_kept(c, true), 0U);
    c.mr_cache_entries = 64;  // the variable wins either way
    EXPECT_EQ(loom::plugins::idle_registrations_kept(c, false), 64U);
    EXPECT_EQ(loom::plugins::idle_registrations_kept(c, true), 64U);
    c.mr_cache_entries = 0;
    EXPECT_EQ(loom::plugins::idle_registrations_kept(c, false), 0U);
}

TEST(PluginConfig, MalformedValuesAreErrorsNamingTheVariable) {
    for (const auto& [name, value] :
         std::multimap<std::string, std::string>{{"LOOM_EAGER_MAX", "lots"},
                                                 {"LOOM_EAGER_MAX", "-1"},
                                                 {"LOOM_EAGER_MAX", "99999999999999999999g"},
                                                 {"LOOM_EAGAIN_TIMEOUT_MS", "0"},
                                                 {"LOOM_PEER_TIMEOUT_MS", "5s"},
                                                 {"LOOM_PEER_TIMEOUT_MS", "99"},
                                                 {"LOOM_CONNECT_TIMEOUT_MS", "999999999999"},
                                                 {"LOOM_PROGRESS_THREAD", "maybe"},
                                                 {"LOOM_LIVENESS_ENDPOINT", "2"},
                                                 {"LOOM_LOG_LEVEL", "chatty"},
                                                 {"LOOM_MR_CACHE_ENTRIES", "many"},
                                                 {"LOOM_CQ_SIZE", "0"},
                                                 {"LOOM_CQ_SIZE", "32M"},
                                                 {"LOOM_HMEM", "cuda"},
                                                 {"LOOM_FLUSH", "sometimes"}}) {
        auto c = parse({{name, value}});
        ASSERT_FALSE(c) << name << "=" << value;
        EXPECT_EQ(c.error(), make_error_code(loom::errc::invalid_argument));
        EXPECT_NE(config::last_error().find(name), std::string::npos) << config::last_error();
    }
}

TEST(PluginConfig, SizesBoolsAndLists) {
    using namespace loom::plugins;
    EXPECT_EQ(parse_size("0"), 0U);
    EXPECT_EQ(parse_size("4096"), 4096U);
    EXPECT_EQ(parse_size("4k"), 4096U);
    EXPECT_EQ(parse_size("2M"), 2U << 20);
    EXPECT_EQ(parse_size("1g"), 1U << 30);
    for (const char* t : {"", "k", "1.5k", " 1", "1 ", "0x10", "-3", "12kb"}) EXPECT_FALSE(parse_size(t)) << t;
    EXPECT_EQ(parse_bool("on"), true);
    EXPECT_EQ(parse_bool("0"), false);
    EXPECT_FALSE(parse_bool("2"));
    EXPECT_EQ(split_list("a,,b,"), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(split_list("").empty());
}

TEST(PluginConfig, OverridesReplaceWhatIsSetAndNameTheirConflicts) {
    auto c = parse({{"LOOM_PROVIDER", "shm"}, {"LOOM_EAGER_MAX", "8k"}});
    ASSERT_TRUE(c);
    const loom::plugins::config_overrides none{};
    EXPECT_EQ(none.conflict_with(*c), "");
    const loom::plugins::config_overrides o{.provider = "tcp", .iface = "lo", .eager_max = 4096};
    EXPECT_NE(o.conflict_with(*c).find("provider 'tcp'"), std::string::npos);
    o.apply_to(*c);
    EXPECT_EQ(c->provider, "tcp");
    EXPECT_EQ(c->iface, "lo");
    EXPECT_EQ(c->eager_max, 4096U);
    EXPECT_EQ(c->peer_timeout.count(), 5000);  // what is not overridden stays
    EXPECT_EQ(o.conflict_with(*c), "");
    const loom::plugins::config_overrides eager{.eager_max = 1024};
    EXPECT_NE(eager.conflict_with(*c).find("eager limit 1024"), std::string::npos);
    const loom::plugins::config_overrides iface{.iface = "eth0"};
    EXPECT_NE(iface.conflict_with(*c).find("interfaces 'eth0'"), std::string::npos);
}

TEST(PluginTagSequences, CountPerTagAndWrapAtTwelveBits) {
    loom::plugins::tag_sequences s;
    EXPECT_EQ(s.next(7), 0U);
    EXPECT_EQ(s.next(7), 1U);
    EXPECT_EQ(s.next(9), 0U);
    EXPECT_EQ(s.next(7), 2U);
    for (int i = 3; i < 4096; ++i) ASSERT_EQ(s.next(7), static_cast<std::uint32_t>(i));
    EXPECT_EQ(s.next(7), 0U);  // wraps: at most 32 requests are ever in flight per tag
    s.reset();
    EXPECT_EQ(s.next(9), 0U);
}

TEST(PluginTagSequences, FullTableIsReportedNotOverwritten) {
    loom::plugins::tag_sequences s;
    std::set<std::uint32_t> tags;
    for (std::uint32_t t = 0; t < loom::plugins::tag_table_size; ++t) ASSERT_EQ(s.next(t * 977U), 0U);
    EXPECT_FALSE(s.next(123456789U).has_value());
    EXPECT_EQ(s.next(977U), 1U);  // existing tags keep counting
}

}  // namespace
