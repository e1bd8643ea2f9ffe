// SPDX-License-Identifier: Apache-2.0
// The daemon's log lines (logfmt, JSON), the journal-stream check and the spdlog formatter.
#include "logging/journal_stream.h"
#include "logging/log_line_format.h"
#include "logging/log_line_formatter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/details/log_msg.h>

#include <chrono>
#include <string>

namespace neutracer {
namespace {

using namespace std::chrono;

// 2026-11-26T08:41:53.123Z
const system_clock::time_point kTime = system_clock::time_point(milliseconds(1795682513123LL));

std::string logfmt(std::string_view message, std::string_view level = "info") {
  return format_log_line(LogFormat::logfmt, {kTime, level, message});
}

nlohmann::json json_line(std::string_view message) {
  const std::string line = format_log_line(LogFormat::json, {kTime, "warn", message});
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one record, one line";
  return nlohmann::json::parse(line);
}

TEST(LogLineFormat, ParsesTheTwoFormatNames) {
  EXPECT_EQ(parse_log_format("logfmt"), LogFormat::logfmt);
  EXPECT_EQ(parse_log_format("json"), LogFormat::json);
  EXPECT_FALSE(parse_log_format("JSON"));
  EXPECT_FALSE(parse_log_format(""));
}

TEST(LogLineFormat, TimeIsRfc3339UtcWithMilliseconds) {
  EXPECT_EQ(rfc3339_utc_millis(kTime), "2026-11-26T08:41:53.123Z");
  EXPECT_EQ(rfc3339_utc_millis(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(rfc3339_utc_millis(system_clock::time_point(milliseconds(-1))),
            "1969-12-31T23:59:59.999Z");
}

TEST(LogLineFormat, LogfmtQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(logfmt("started"), "ts=2026-11-26T08:41:53.123Z level=info msg=started\n");
  EXPECT_EQ(logfmt("scan took 3 ms", "warn"),
            "ts=2026-11-26T08:41:53.123Z level=warn msg=\"scan took 3 ms\"\n");
  EXPECT_EQ(logfmt(""), "ts=2026-11-26T08:41:53.123Z level=info msg=\"\"\n");
  EXPECT_EQ(logfmt("a=b"), "ts=2026-11-26T08:41:53.123Z level=info msg=\"a=b\"\n");
}

TEST(LogLineFormat, LogfmtEscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(logfmt("kernel \"k\\1\"\nnext\tline\r\x01\x7f"),
            "ts=2026-11-26T08:41:53.123Z level=info "
            "msg=\"kernel \\\"k\\\\1\\\"\\nnext\\tline\\r\\u0001\\u007f\"\n");
}

TEST(LogLineFormat, InvalidUtf8BecomesReplacementCharacter) {
  EXPECT_EQ(logfmt("comm \xff\xfe ok"),
            "ts=2026-11-26T08:41:53.123Z level=info msg=\"comm \xEF\xBF\xBD\xEF\xBF\xBD ok\"\n");
  EXPECT_EQ(json_line("\xc3(")["msg"], "\xEF\xBF\xBD(");
  EXPECT_EQ(logfmt("ünïcode"), "ts=2026-11-26T08:41:53.123Z level=info msg=\"ünïcode\"\n");
}

TEST(LogLineFormat, JsonIsOneObjectPerLineWithTsLevelMsg) {
  const auto hostile = std::string("say \"hi\" \\ \n\x02 end") + '\0' + "after nul";
  const auto line = json_line(hostile);
  EXPECT_EQ(line["ts"], "2026-11-26T08:41:53.123Z");
  EXPECT_EQ(line["level"], "warn");
  EXPECT_EQ(line["msg"], hostile);
  EXPECT_EQ(line.size(), 3u);
}

TEST(JournalStream, MatchesOnlyTheSameDeviceAndInode) {
  EXPECT_TRUE(journal_stream_matches("64769:123456", 64769, 123456));
  EXPECT_FALSE(journal_stream_matches("64769:123456", 64769, 123457));
  EXPECT_FALSE(journal_stream_matches("64769:123456", 1, 123456));
  for (const char *malformed : {"", ":", "64769", "64769:", ":123456", "64769:123456x",
                                "-1:123456", "64769:123456:1", " 64769:123456"})
    EXPECT_FALSE(journal_stream_matches(malformed, 64769, 123456)) << malformed;
}

TEST(LogLineFormatter, WritesTheRecordAsALineWithTheFlagsLevelNames) {
  LogLineFormatter formatter(LogFormat::logfmt);
  spdlog::details::log_msg message("neutracerd", spdlog::level::warn, "probe \"x\" failed");
  message.time = kTime;
  spdlog::memory_buf_t out;
  formatter.format(message, out);
  EXPECT_EQ(std::string(out.data(), out.size()),
            "ts=2026-11-26T08:41:53.123Z level=warn msg=\"probe \\\"x\\\" failed\"\n");
  const auto copy = formatter.clone();
  spdlog::memory_buf_t again;
  copy->format(message, again);
  EXPECT_EQ(std::string(again.data(), again.size()), std::string(out.data(), out.size()));
  EXPECT_EQ(log_level_name(spdlog::level::err), "error");
  EXPECT_EQ(log_level_name(spdlog::level::critical), "critical");
  EXPECT_EQ(log_level_name(spdlog::level::trace), "trace");
  EXPECT_EQ(log_level_name(spdlog::level::debug), "debug");
  EXPECT_EQ(log_level_name(spdlog::level::info), "info");
  EXPECT_EQ(log_level_name(spdlog::level::warn), "warn");
  EXPECT_EQ(log_level_name(spdlog::level::off), "off");
}

} // namespace
} // namespace neutracer
