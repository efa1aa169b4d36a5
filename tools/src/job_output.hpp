#pragma once
/// @file
/// What `redcoord jobs work` makes of a job's CMD: its stdout (bounded) is the result, the end
/// of its stderr goes into a failure's text, and `progress <text>` lines on its descriptor 3
/// are progress reports. Pure: fed bytes, no I/O.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace redcoord::cli {

/// The most bytes of CMD's stdout a job's result may have (1 MiB). More fails the attempt.
inline constexpr std::size_t max_job_result = std::size_t{1} << 20;
/// How many bytes of the end of CMD's stderr a failure's text keeps.
inline constexpr std::size_t job_stderr_tail = 512;
/// The longest line on descriptor 3 that is read (64 KiB); longer ones are skipped whole.
inline constexpr std::size_t max_progress_line = std::size_t{64} << 10;

/// Why CMD ended, as far as the worker is concerned.
enum class job_stop {
    none,       ///< CMD exited on its own.
    timed_out,  ///< The worker's --timeout or the job's timeout passed; CMD was stopped.
    stopped,    ///< The job was cancelled or its lease lost; CMD was stopped.
    drained,    ///< The worker's drain ran out of time; CMD was stopped.
};

/// Collects one run's output. Thread-safety: none (one per job, on its supervising thread).
class job_output {
public:
    /// Bytes CMD wrote to stdout: kept up to max_job_result, then only counted.
    void out(std::string_view bytes);
    /// Bytes CMD wrote to stderr: only the last job_stderr_tail are kept.
    void err(std::string_view bytes);
    /// Bytes CMD wrote to descriptor 3. Returns the text of the last complete `progress <text>`
    /// line among them (the newline and a carriage return before it removed), if any; other
    /// lines are ignored, and a line over max_progress_line is skipped.
    [[nodiscard]] std::optional<std::string> progress(std::string_view bytes);

    /// True when stdout went past max_job_result.
    [[nodiscard]] bool result_too_large() const noexcept { return out_bytes_ > max_job_result; }
    /// CMD's stdout (all of it unless result_too_large()).
    [[nodiscard]] const std::string& result() const noexcept { return out_; }
    /// The end of CMD's stderr, surrounding white space removed.
    [[nodiscard]] std::string stderr_tail() const;

    /// The attempt's failure text for CMD's `status` (exit code, or 128 + signal) and how it
    /// ended; nullopt when the attempt succeeded (exit 0 on its own, result within bounds).
    [[nodiscard]] std::optional<std::string> failure(int status, job_stop stop) const;

private:
    std::string out_, err_, line_;
    std::size_t out_bytes_ = 0;
    bool skipping_line_ = false;
};

}  // namespace redcoord::cli
