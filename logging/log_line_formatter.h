// SPDX-License-Identifier: Apache-2.0
#pragma once
// spdlog's side of format_log_line: what the stderr sink writes for each record.
#include <memory>
#include <spdlog/formatter.h>

#include "logging/log_line_format.h"

namespace neutracer {

class LogLineFormatter final : public spdlog::formatter {
public:
  explicit LogLineFormatter(LogFormat format) : format_(format) {}
  void format(const spdlog::details::log_msg &message, spdlog::memory_buf_t &dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

private:
  LogFormat format_;
};

// The level as --log.level spells it ("warn", not spdlog's "warning").
std::string_view log_level_name(spdlog::level::level_enum level);

} // namespace neutracer
