// SPDX-License-Identifier: Apache-2.0
#include "exporters/process_index_page.h"

#include "exporters/html_escape.h"

namespace neutracer {

std::string process_index_page(std::string_view title, std::string_view page_path,
                               const std::map<ProcessId, std::string> &summaries,
                               const std::map<ProcessId, std::string> &comms) {
  std::string page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>";
  page += title;
  page += "</title></head>\n<body style=\"font-family:sans-serif\">\n<h1>";
  page += title;
  page += "</h1>\n<ul>\n";
  for (const auto &[id, summary] : summaries) {
    const auto comm = comms.contains(id) ? comms.at(id) : std::string("?");
    const auto pid = std::to_string(id.pid);
    page += "<li><a href=\"";
    page += page_path;
    page += "?pid=" + pid + "\">" + html_escape(comm) + " (pid " + pid + ")</a>: " + summary +
            "</li>\n";
  }
  page += "</ul></body></html>\n";
  return page;
}

} // namespace neutracer
