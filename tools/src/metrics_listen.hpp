#pragma once
/// @file
/// `--metrics-listen ADDR` of `elect` and `lock`: the supervising process's `/metrics`,
/// `/healthz` and `/readyz`.

#include "context.hpp"

#include <redcoord/http/metrics_server.hpp>

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redcoord::cli {

/// Adds `--metrics-listen ADDR` to `sub`, writing into `target` (empty: not given).
CLI::Option* add_metrics_listen(CLI::App& sub, std::string& target);

/// When `addr` is not empty: installs a metrics registry on the process's shared runtime (so
/// call it before building the primitives whose metrics it should show) and serves it, with
/// `/healthz` and `/readyz` probing `eps`, at `addr`; says where on stderr (a note, and a
/// `{"event":"metrics_listen","url":...}` line with --json). Returns null when `addr` is empty.
/// @throws invalid_argument for a bad address; error when it cannot be bound.
[[nodiscard]] std::unique_ptr<metrics_server> start_metrics_listen(
    const context& ctx, const std::string& addr, const std::vector<endpoint>& eps);

}  // namespace redcoord::cli
