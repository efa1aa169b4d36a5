#include <redcoord/core/detail/callback_executor.hpp>

#include <redcoord/core/runtime.hpp>

#include <boost/asio/io_context.hpp>

namespace redcoord::detail {

boost::asio::any_io_executor completion_executor(runtime& rt) {
    auto& io = rt.io();
    if (rt.io_is_callers()) return io.get_executor();
    return callback_executor(io, std::make_shared<strand>(rt.callbacks()));
}

}  // namespace redcoord::detail
