#pragma once
// Parsers of the replies and messages a Sentinel client reads: SENTINEL get-master-addr-by-name,
// SENTINEL replicas, the +switch-master / +promoted-slave notifications, and a data node's role
// (ROLE, HELLO 2, INFO replication). Pure functions over reply values; tested without a server
// in tests/unit/core_sentinel_parse_test.cpp.

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/reply.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::detail {

/// A TCP port in decimal (1..65535), or nullopt.
[[nodiscard]] std::optional<std::uint16_t> parse_port(std::string_view s) noexcept;

/// "host:port", for messages.
[[nodiscard]] std::string addr_text(const host_port& hp);

/// True when an error text is an authentication refusal (NOAUTH, WRONGPASS, ...).
[[nodiscard]] bool is_auth_text(std::string_view s) noexcept;

/// One sentinel's answer to `SENTINEL get-master-addr-by-name <service>`.
struct master_answer {
    enum class kind {
        master,       ///< It named `addr`.
        unknown,      ///< Nil: it does not monitor the service.
        refused,      ///< An error reply (`text`; `auth` when an authentication refusal).
        bad_reply,    ///< A reply of the wrong shape or a bad port (`text` says which).
        unreachable,  ///< No reply: not connected, closed, timed out (`text`).
    };
    kind what = kind::unreachable;
    host_port addr;
    std::string text;
    bool auth = false;
    /// Unreachable because its pool is still in reconnect back-off ("failed recently"): the
    /// cause is the earlier failure's, not known from this answer.
    bool failed_recently = false;
};

/// Reads a get-master-addr-by-name reply (`[ip, port]`, nil, or an error).
[[nodiscard]] master_answer parse_master_answer(const reply& r);
/// The answer of a sentinel that could not be asked (`error` is the failure's text).
[[nodiscard]] master_answer unreachable_answer(std::string error);

/// One entry of `SENTINEL replicas <service>`.
struct replica_entry {
    host_port addr;
    std::string flags;  ///< Comma-separated, e.g. "slave,s_down,disconnected" or "slave,promoted".
};

/// Reads `SENTINEL replicas`: one flat field/value array per replica; entries without an ip
/// or a valid port are skipped. @throws protocol_error when the reply is not an array.
[[nodiscard]] std::vector<replica_entry> parse_replica_entries(const reply& r);
/// The replicas not flagged s_down, o_down or disconnected, in the sentinel's order.
[[nodiscard]] std::vector<host_port> usable_replicas(const std::vector<replica_entry>& entries);
/// The replicas flagged `promoted` (a failover leader's choice), without duplicates.
[[nodiscard]] std::vector<host_port> promoted_replicas(const std::vector<replica_entry>& entries);

/// The new master a Sentinel notification announces for `service`, or nullopt (another
/// service, another channel, or a malformed payload).
/// +switch-master: "<name> <old-ip> <old-port> <new-ip> <new-port>";
/// +promoted-slave: "slave <ip:port> <ip> <port> @ <name> <master-ip> <master-port>".
[[nodiscard]] std::optional<host_port> parse_notification(std::string_view channel,
                                                          std::string_view payload,
                                                          std::string_view service);

/// The role in a ROLE reply (its first element).
[[nodiscard]] std::optional<std::string> role_from_role_reply(const reply& r);
/// The "role" field of a HELLO 2 reply (a flat field/value array).
[[nodiscard]] std::optional<std::string> role_from_hello(const reply& r);
/// The "role" line of an INFO replication reply.
[[nodiscard]] std::optional<std::string> role_from_info(const reply& r);
/// The value of `key` in an INFO section ("key:value" lines).
[[nodiscard]] std::optional<std::string> info_field(const reply& r, std::string_view key);

/// The replicas a master's ROLE reply lists (`["master", offset, [[ip, port, offset], ...]]`);
/// empty for a replica's or sentinel's ROLE.
[[nodiscard]] std::vector<host_port> replicas_from_role(const reply& r);
/// The same from a master's `INFO replication` (its `slave<N>:ip=...,port=...,...` lines), for
/// a user that may run INFO but not ROLE; empty when the reply is not a master's.
[[nodiscard]] std::vector<host_port> replicas_from_info(const reply& r);

}  // namespace redcoord::detail
