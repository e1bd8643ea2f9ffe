// SPDX-License-Identifier: Apache-2.0
#pragma once
// The daemon's one logger: natively to the journal, each line with its PRIORITY, when systemd
// runs it (stderr is the journal stream); otherwise logfmt or JSON lines on stderr.
#include <string_view>

#include "logging/log_line_format.h"

namespace neutracer {

enum class LogDestination { journal, stderr_lines };

// Installs the default spdlog logger "neutracerd" at `level` (a --log.level name; the config
// checked it). Returns where records go.
LogDestination install_logger(LogFormat format, std::string_view level);

// For errors before the logger exists (bad flags or config): "neutracerd: MESSAGE" on stderr,
// marked "<3>" (error) when stderr is the journal stream so journald files it as PRIORITY=3.
void report_startup_error(std::string_view message);

} // namespace neutracer
