#pragma once
// A headless chromium driven through the DevTools protocol (a WebSocket, Boost.Beast): open a
// page, run JavaScript in it (clicks, typing) and read back values, watch for JavaScript
// dialogs (an injected `alert` would open one), and take screenshots. Test code only.
#include "cli_harness.hpp"
#include "json.hpp"      // tools/src: json_quote()
#include "payloads.hpp"  // tools/src: base64_decode()

#include <redcoord/testing/process.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <csignal>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace browser_test {

using redcoord::cli::base64_decode;
using redcoord::cli::json_quote;

using namespace std::chrono_literals;
namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// The JSON string that starts at `at` (its opening quote), decoded (\uXXXX kept below 0x80).
inline std::string unquote_at(const std::string& json, std::size_t at) {
    std::string out;
    for (std::size_t i = at + 1; i < json.size(); ++i) {
        const char c = json[i];
        if (c == '"') break;
        if (c != '\\' || i + 1 >= json.size()) {
            out += c;
            continue;
        }
        const char e = json[++i];
        switch (e) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'u': {
                const auto cp = std::stoul(json.substr(i + 1, 4), nullptr, 16);
                out += cp < 0x80 ? static_cast<char>(cp) : '?';
                i += 4;
                break;
            }
            default: out += e;
        }
    }
    return out;
}

// One headless chromium with one page, driven over the DevTools protocol.
class devtools_browser {
public:
    devtools_browser(const std::string& exe, const cli_test::temp_dir& dir)
        : profile_(dir.file("cdp-profile")), proc_(start(exe, profile_, dir.file("cdp.err"))) {
        const std::string port_file = profile_ + "/DevToolsActivePort";
        std::string port;
        if (!cli_test::eventually(
                [&] {
                    port = cli_test::lines_of(cli_test::read_file(port_file)).empty()
                               ? ""
                               : cli_test::lines_of(cli_test::read_file(port_file))[0];
                    return !port.empty();
                },
                60s))
            throw std::runtime_error("chromium did not open its DevTools port: " +
                                     cli_test::read_file(dir.file("cdp.err")));
        port_ = port;
        ws_.connect(page_target());
    }
    ~devtools_browser() {
        proc_.signal(SIGTERM);
        if (!proc_.wait_for(10s)) proc_.kill();
    }

    // Sends `method` with `params` (a JSON object) and returns the answer's JSON.
    std::string call(const std::string& method, const std::string& params = "{}") {
        const int id = ++next_id_;
        ws_.write("{\"id\":" + std::to_string(id) + ",\"method\":" + json_quote(method) +
                  ",\"params\":" + params + "}");
        const std::string lead = "{\"id\":" + std::to_string(id) + ",";
        for (;;) {
            auto msg = ws_.read();
            if (msg.rfind(lead, 0) == 0) return msg;
            // A dialog blocks the page's script (and every evaluation) until answered: it is
            // recorded and dismissed, so a test sees it instead of hanging.
            if (msg.rfind("{\"method\":\"Page.javascriptDialogOpening\"", 0) == 0)
                ws_.write("{\"id\":" + std::to_string(++next_id_) +
                          ",\"method\":\"Page.handleJavaScriptDialog\",\"params\":{"
                          "\"accept\":false}}");
            events_.push_back(std::move(msg));
        }
    }

    // Runs `expression` in the page (awaiting a promise) and returns its value as a string
    // (the expression should yield a string, number or boolean; objects come back empty).
    std::string eval(const std::string& expression) {
        const auto r =
            call("Runtime.evaluate", "{\"expression\":" + json_quote("String(" + expression + ")") +
                                         ",\"awaitPromise\":true,\"returnByValue\":true}");
        const auto at = r.find("\"value\":\"");
        if (r.find("\"exceptionDetails\"") != std::string::npos || at == std::string::npos)
            throw std::runtime_error("evaluation failed: " + expression + ": " + r);
        return unquote_at(r, at + 8);
    }

    // Polls `expression` until it yields "true".
    bool wait_true(const std::string& expression, std::chrono::milliseconds limit = 20s) {
        // A page still loading may not have the elements yet: an error counts as not yet.
        const auto safe =
            "(() => { try { return " + expression + "; } catch (e) { return false; } })()";
        return cli_test::eventually([&] { return eval(safe) == "true"; }, limit);
    }

    void navigate(const std::string& url) {
        (void)call("Page.enable");
        (void)call("Runtime.enable");
        (void)call("Page.navigate", "{\"url\":" + json_quote(url) + "}");
    }

    // Writes a PNG of the whole page to `path`.
    void screenshot(const std::string& path) {
        const auto r =
            call("Page.captureScreenshot", R"({"format":"png","captureBeyondViewport":true})");
        const auto at = r.find("\"data\":\"");
        if (at == std::string::npos) throw std::runtime_error("no screenshot: " + r.substr(0, 300));
        std::ofstream(path, std::ios::binary) << base64_decode(unquote_at(r, at + 7));
    }

    // Every event received so far whose method is `method` (reads what is pending first).
    std::vector<std::string> events(const std::string& method) {
        (void)call("Runtime.evaluate", R"({"expression":"1"})");  // flushes earlier events
        std::vector<std::string> out;
        const std::string lead = "{\"method\":" + json_quote(method);
        for (const auto& e : events_)
            if (e.rfind(lead, 0) == 0) out.push_back(e);
        return out;
    }

private:
    struct socket {
        net::io_context ioc;
        beast::websocket::stream<tcp::socket> ws{ioc};
        void connect(const std::pair<std::string, std::string>& where) {
            tcp::resolver r(ioc);
            net::connect(ws.next_layer(), r.resolve("127.0.0.1", where.first));
            ws.read_message_max(64 * 1024 * 1024);
            ws.handshake("127.0.0.1:" + where.first, where.second);
        }
        void write(const std::string& text) { ws.write(net::buffer(text)); }
        std::string read() {
            beast::flat_buffer b;
            ws.read(b);
            return beast::buffers_to_string(b.data());
        }
    };

    static redcoord::testing::process start(const std::string& exe, const std::string& profile,
                                            const std::string& err) {
        redcoord::testing::process_options o;
        o.own_process_group = true;
        o.output_file = err;
        return redcoord::testing::process(
            {exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--user-data-dir=" + profile, "--remote-debugging-port=0", "--window-size=1280,1500",
             "about:blank"},
            o);
    }

    // (port, path) of the page target's WebSocket, from /json/list.
    std::pair<std::string, std::string> page_target() {
        namespace http = beast::http;
        std::string body;
        cli_test::eventually(
            [&] {
                net::io_context ioc;
                tcp::socket s(ioc);
                tcp::resolver r(ioc);
                net::connect(s, r.resolve("127.0.0.1", port_));
                http::request<http::empty_body> req{http::verb::get, "/json/list", 11};
                req.set(http::field::host, "127.0.0.1:" + port_);
                http::write(s, req);
                beast::flat_buffer b;
                http::response<http::string_body> res;
                http::read(s, b, res);
                body = res.body();
                return body.find("\"type\": \"page\"") != std::string::npos;
            },
            30s);
        static const std::regex re(
            R"re("webSocketDebuggerUrl": "ws://[^/]+(/devtools/page/[^"]+)")re");
        std::smatch m;
        if (!std::regex_search(body, m, re)) throw std::runtime_error("no page target: " + body);
        return {port_, m[1]};
    }

    std::string profile_;
    redcoord::testing::process proc_;
    std::string port_;
    socket ws_;
    int next_id_ = 0;
    std::vector<std::string> events_;
};

}  // namespace browser_test
