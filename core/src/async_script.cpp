// Scripts over the pipelined link (async_script.hpp). The call's keys and arguments are
// encoded once, as EVALSHA; a NOSCRIPT reply gets the same command as EVAL, made by replacing
// the verb and the digest in front of the encoded keys and arguments, so nothing of the call
// but one string stays in memory while it is in flight.
#include <redcoord/core/detail/async_script.hpp>

#include "connection_impl.hpp"

#include <string_view>

namespace redcoord::detail {

namespace {

// The bytes of a RESP array header ("*<n>\r\n") at the front of `wire`.
std::size_t header_size(std::string_view wire) { return wire.find("\r\n") + 2; }

// `evalsha` (EVALSHA, digest, then the rest) as EVAL with `source` in place of the digest.
std::string as_eval(std::string_view evalsha, std::string_view sha1, std::string_view source) {
    const std::string_view verb_and_sha[] = {"EVALSHA", sha1};
    const std::string_view verb_and_source[] = {"EVAL", source};
    const std::string head = encode_command(verb_and_sha);
    const std::string eval = encode_command(verb_and_source);
    const std::size_t rest = header_size(evalsha) + head.size() - header_size(head);
    std::string out;
    out.reserve(evalsha.size() - head.size() + eval.size());
    out.append(evalsha.substr(0, header_size(evalsha)));
    out.append(std::string_view(eval).substr(header_size(eval)));
    out.append(evalsha.substr(rest));
    return out;
}

std::string encode_evalsha(const script_call& call) {
    const std::string count = std::to_string(call.keys.size());
    std::vector<std::string_view> argv;
    argv.reserve(3 + call.keys.size() + call.args.size());
    argv.emplace_back("EVALSHA");
    argv.emplace_back(call.lua->sha1());
    argv.emplace_back(count);
    for (const auto& k : call.keys) argv.emplace_back(k);
    for (const auto& a : call.args) argv.emplace_back(a);
    return encode_command(argv);
}

bool is_noscript(const link_outcome& o) {
    return o.result.answered() && o.result.value->is_error() &&
           error_code_is(o.result.value->text(), "NOSCRIPT");
}

// Sends `evalsha` on `link`, and on a NOSCRIPT reply the EVAL that `make_eval()` returns, with
// the same deadline; `h` gets the final outcome. `make_eval` is all the reply's handler keeps
// of the call.
template <class MakeEval>
void send_evalsha(const std::shared_ptr<async_link>& link,
                  const std::shared_ptr<const std::string>& evalsha,
                  async_link::clock_type::time_point deadline, async_link::handler h,
                  MakeEval make_eval) {
    link->exec_encoded(evalsha, deadline,
                       [link, deadline, h = std::move(h),
                        make_eval = std::move(make_eval)](link_outcome o) mutable {
                           if (!is_noscript(o)) return h(std::move(o));
                           link->exec_encoded(std::make_shared<const std::string>(make_eval()),
                                              deadline, std::move(h));
                       });
}

}  // namespace

// A sink, as in the header (callers move in the call they built): encoded, then let go.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
void exec_script(const std::shared_ptr<async_link>& link, script_call call,
                 async_link::clock_type::time_point deadline, async_link::handler h) {
    auto wire = std::make_shared<const std::string>(encode_evalsha(call));
    send_evalsha(link, wire, deadline, std::move(h),
                 [wire, lua = call.lua] { return as_eval(*wire, lua->sha1(), lua->source()); });
}

// A sink too: the source moves into the reply's handler.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
void exec_script(const std::shared_ptr<async_link>& link, script_call_source source,
                 async_link::clock_type::time_point deadline, async_link::handler h) {
    const auto wire = std::make_shared<const std::string>(encode_evalsha(source()));
    send_evalsha(link, wire, deadline, std::move(h), [source = std::move(source)] {
        const script_call call = source();
        return as_eval(encode_evalsha(call), call.lua->sha1(), call.lua->source());
    });
}

}  // namespace redcoord::detail
