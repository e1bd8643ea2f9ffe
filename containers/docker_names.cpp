// SPDX-License-Identifier: Apache-2.0
#include "containers/docker_names.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "containers/container_identity.h"

namespace neutracer {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxNameLength = 255;

// Docker's restrictedNameChars: [a-zA-Z0-9][a-zA-Z0-9_.-]+
bool is_docker_name(std::string_view name) {
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (name.size() < 2 || name.size() > kMaxNameLength || !alnum(name.front()))
    return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

// Keeps the top-level "Name" and "ID" strings and nothing else.
class TopLevelStrings : public nlohmann::json_sax<json> {
public:
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t &) override { return value(); }
  bool binary(binary_t &) override { return value(); }
  bool string(string_t &text) override {
    if (depth_ == 1 && top_is_object_) {
      if (key_ == "Name")
        return keep(name_, text);
      if (key_ == "ID")
        return keep(id_, text);
    }
    return value();
  }
  bool key(string_t &text) override {
    if (depth_ == 1)
      key_ = text;
    return true;
  }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &) override {
    error_ = "not valid JSON at byte " + std::to_string(position);
    return false;
  }

  const std::optional<std::string> &name() const { return name_; }
  const std::optional<std::string> &id() const { return id_; }
  const std::string &error() const { return error_; }

private:
  bool value() {
    key_.clear();
    return true;
  }
  bool keep(std::optional<std::string> &slot, string_t &text) {
    if (slot) {
      error_ = "\"" + key_ + "\" appears twice";
      return false;
    }
    slot = std::move(text);
    return value();
  }
  bool open(bool object) {
    if (depth_ == 0)
      top_is_object_ = object;
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    if (depth_ == 1)
      key_.clear();
    return true;
  }

  std::size_t depth_ = 0;
  bool top_is_object_ = false;
  std::string key_;
  std::optional<std::string> name_;
  std::optional<std::string> id_;
  std::string error_;
};

// read(2) that retries interrupted calls.
ssize_t read_some(int fd, char *buffer, std::size_t size) {
  ssize_t got;
  do
    got = ::read(fd, buffer, size);
  while (got < 0 && errno == EINTR);
  return got;
}

// The first 12 digits, as `docker ps` shows an id.
std::string short_id(const std::string &id) { return id.substr(0, 12); }

} // namespace

DockerName parse_docker_config_name(std::string_view config_json, std::string_view id) {
  TopLevelStrings strings;
  if (!json::sax_parse(config_json, &strings))
    return {{}, strings.error().empty() ? "not valid JSON" : strings.error()};
  if (!strings.id())
    return {{}, "no top-level \"ID\" string"};
  if (*strings.id() != id)
    return {{}, "its \"ID\" is another container's"};
  if (!strings.name())
    return {{}, "no top-level \"Name\" string"};
  std::string_view name = *strings.name();
  if (name.starts_with('/'))
    name.remove_prefix(1);
  if (!is_docker_name(name))
    return {{},
            "\"Name\" is not a Docker container name ([a-zA-Z0-9][a-zA-Z0-9_.-]+, at most " +
                std::to_string(kMaxNameLength) + " characters)"};
  return {std::string(name), {}};
}

DockerNameRead read_docker_container_name(const std::filesystem::path &containers_dir,
                                          const std::string &id) {
  if (!is_container_id(id))
    return {{{}, "not a container id"}, EINVAL};
  const auto path = containers_dir / id / "config.v2.json";
  // O_NONBLOCK: a FIFO put there must not stall the scan; O_NOFOLLOW: no link to elsewhere.
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    const int error = errno;
    return {{{}, std::string("cannot open: ") + std::strerror(error)}, error};
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0)
    return {{{}, std::string("cannot stat: ") + std::strerror(errno)}, 0};
  if (!S_ISREG(status.st_mode))
    return {{{}, "not a regular file"}, 0};
  if (static_cast<std::uint64_t>(status.st_size) > kMaxDockerConfigBytes)
    return {{{},
             std::to_string(status.st_size) + " bytes, more than the " +
                 std::to_string(kMaxDockerConfigBytes) + " read"},
            0};
  // dockerd replaces the file atomically; still, read no more than the bound.
  std::string text(static_cast<std::size_t>(status.st_size) + 1, '\0');
  std::size_t size = 0;
  while (size < text.size()) {
    const auto got = read_some(fd.get(), text.data() + size, text.size() - size);
    if (got < 0)
      return {{{}, std::string("cannot read: ") + std::strerror(errno)}, 0};
    if (got == 0)
      break;
    size += static_cast<std::size_t>(got);
  }
  if (size > static_cast<std::size_t>(status.st_size))
    return {{{}, "grew while being read"}, 0};
  text.resize(size);
  return {parse_docker_config_name(text, id), 0};
}

void DockerContainerNames::resolve_containers(std::span<ContainerInfo *const> containers) {
  if (containers_dir_.empty())
    return;
  std::map<std::string, std::string> seen;
  for (auto *container : containers) {
    const auto &identity = container->identity;
    const bool maybe_docker =
        identity.runtime == "docker" || (identity.runtime.empty() && identity.pod_uid.empty());
    if (identity.id.empty() || !maybe_docker)
      continue;
    if (const auto known = seen.find(identity.id); known != seen.end()) {
      container->runtime_name = known->second;
      continue;
    }
    if (auto kept = names_.find(identity.id); kept != names_.end()) {
      container->runtime_name = kept->second;
      seen.insert(names_.extract(kept));
      continue;
    }
    ++reads_;
    const auto read = read_docker_container_name(containers_dir_, identity.id);
    if (read.open_errno == EMFILE || read.open_errno == ENFILE) {
      spdlog::debug("docker: no name for container {} this scan: {}", short_id(identity.id),
                    read.result.error);
      continue; // not remembered: tried again next scan
    }
    if (!read.result.error.empty()) {
      // No file: not a Docker container (or its directory is elsewhere). Anything else is
      // worth a look: the file is Docker's own.
      const auto level = read.open_errno == ENOENT ? spdlog::level::debug : spdlog::level::warn;
      spdlog::log(level,
                  "docker: {}: {}; the container's series have container_id but no "
                  "container label",
                  (containers_dir_ / identity.id / "config.v2.json").string(), read.result.error);
    }
    container->runtime_name = read.result.name;
    seen.emplace(identity.id, read.result.name);
  }
  names_ = std::move(seen);
}

} // namespace neutracer
