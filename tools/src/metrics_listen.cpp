#include "metrics_listen.hpp"

#include "listen_address.hpp"

#include <redcoord/core/runtime.hpp>

namespace redcoord::cli {

CLI::Option* add_metrics_listen(CLI::App& sub, std::string& target) {
    return sub.add_option("--metrics-listen", target,
                          "Serve /metrics, /healthz and /readyz (PING of the servers within 1s) "
                          "at ADDR: HOST:PORT, [IPV6]:PORT, or PORT for 127.0.0.1 (0: any free "
                          "port; the URL is printed)");
}

std::unique_ptr<metrics_server> start_metrics_listen(const context& ctx, const std::string& addr,
                                                     const std::vector<endpoint>& eps) {
    if (addr.empty()) return nullptr;
    const auto where = parse_listen_address(addr, "--metrics-listen");
    auto registry = std::make_shared<metrics_registry>();
    runtime::shared()->set_metrics(registry);
    metrics_server_options o;
    o.address = where.host;
    o.port = where.port;
    o.ready_endpoints = eps;
    auto server = std::make_unique<metrics_server>(registry, o);
    const auto url = server->url();
    const auto base = url.substr(0, url.size() - o.path.size());
    print_note("serving /metrics, /healthz and /readyz at " + base);
    emit_event(ctx, json_object().add("event", "metrics_listen").add("url", base));
    return server;
}

}  // namespace redcoord::cli
