// SPDX-License-Identifier: Apache-2.0
// End to end, as root: the real daemon names the call sites of a stand-in program built with
// frame pointers (tests/standin/sites.c): its failed and leaking allocations, a long wait and
// sampled launches, in /api/v1/processes/<pid>/sites, the journal, the flame graph and the
// memory page. Judges only its own processes.
#include <algorithm>
#include <cstdlib>
#include <gtest/gtest.h>
#include <sstream>
#include <nlohmann/json.hpp>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

constexpr const char *kSitesComm = "neutracer-sites";
constexpr const char *kLeakMessageId = "3dd5317340b24af494c60d5f9bde2eba";
constexpr const char *kOomMessageId = "300aaf922eb2453baeec2d829451f171";
constexpr const char *kHangMessageId = "532415b45116440fa5459ceab6100463";

class CallSitesE2E : public DaemonE2E {
protected:
  std::string config_yaml() const override {
    return "cuda: {launch_counting: exact}\n"
           "detectors:\n"
           "  leak: {window: 1s, windows: 3, min_growth_bytes: 1048576,\n"
           "         sample_step_bytes: 1048576}\n"
           "  hang: {call_threshold: 1s, stalled_launches: 1m}\n"
           "alerts: {cooldown: 1m, max_per_minute: 100}\n"
           "stacks: {launch_sample_every: 100}\n";
  }
  bool capture_journal() const override { return true; }

  struct Program {
    std::unique_ptr<ChildProcess> process;
    std::string pid;
    fs::path go, exit;
  };

  // Starts neutracer-sites with `steps` between a start and an exit file; returns once the
  // daemon traces it. The steps run after release().
  Program start(const std::vector<std::string> &steps) {
    static int counter = 0;
    Program program;
    program.go = dir_ / ("sites-go" + std::to_string(counter));
    program.exit = dir_ / ("sites-exit" + std::to_string(counter++));
    std::vector<std::string> argv{NEUTRACER_SITES_PATH, "ready", "wait:" + program.go.string()};
    argv.insert(argv.end(), steps.begin(), steps.end());
    argv.push_back("wait:" + program.exit.string());
    program.process = std::make_unique<ChildProcess>(argv, (dir_ / "sites.err").string());
    const auto ready = program.process->wait_for_line("ready ", 10s);
    EXPECT_TRUE(ready) << "neutracer-sites did not start";
    if (!ready)
      return program;
    program.pid = ready->substr(6);
    EXPECT_TRUE(program.process->wait_for_line("waiting " + program.go.string(), 10s));
    EXPECT_TRUE(eventually(
        [&] {
          return value(scrape(), "neutracer_cuda_memory_used_bytes",
                       {{"pid", program.pid}, {"comm", kSitesComm}, {"kind", "device"}}) >= 0;
        },
        10s))
        << "daemon never discovered pid " << program.pid << "; log: " << log();
    return program;
  }
  void release(const Program &program) { std::ofstream(program.go).put('\n'); }
  void wait_done(Program &program) {
    EXPECT_TRUE(program.process->wait_for_line("waiting " + program.exit.string(), 60s))
        << "steps did not finish; stderr in " << dir_ / "sites.err";
    wait_scans(2);
  }
  void finish(Program &program) {
    std::ofstream(program.exit).put('\n');
    const auto status = program.process->wait_exit(10s);
    ASSERT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "neutracer-sites failed; stderr in " << dir_ / "sites.err";
  }

  nlohmann::json sites(const std::string &pid) {
    const auto reply = http_get(port_, "/api/v1/processes/" + pid + "/sites");
    EXPECT_TRUE(reply && reply->status == 200) << (reply ? reply->body : "no reply");
    return reply && reply->status == 200 ? nlohmann::json::parse(reply->body) : nlohmann::json{};
  }

  // The site whose first frame is `function`; null json when none is.
  static nlohmann::json site_at(const nlohmann::json &document, const std::string &function) {
    for (const auto &site : document["sites"])
      if (site.contains("frames") && !site["frames"].empty() &&
          site["frames"][0]["function"] == function)
        return site;
    return nullptr;
  }

  static std::vector<std::string> functions(const nlohmann::json &site) {
    std::vector<std::string> names;
    for (const auto &frame : site["frames"])
      names.push_back(frame["function"].is_string() ? frame["function"].get<std::string>() : "?");
    return names;
  }

  std::vector<JournalFields> journal_entries(const std::string &message_id,
                                             const std::string &pid) {
    std::vector<JournalFields> found;
    for (const auto &entry : journal_->entries())
      if (entry.count("MESSAGE_ID") && entry.at("MESSAGE_ID") == message_id &&
          entry.count("TARGET_PID") && entry.at("TARGET_PID") == pid)
        found.push_back(entry);
    return found;
  }

  // A script of tests/privileged/py_sites run by NEUTRACER_SITES_PYTHON on the stand-in driver
  // (`script LIBCUDA GO_FILE EXIT_FILE ARG`), once the daemon traces it; it waits for its go
  // file, and for its exit file before it exits.
  struct Script {
    std::unique_ptr<ChildProcess> process;
    std::string pid, version;
    fs::path go, exit;
  };
  Script start_script(const std::string &name, const std::string &arg,
                      const std::string &python = NEUTRACER_SITES_PYTHON) {
    static int started = 0; // each run its own files: an earlier run's go file is still there
    Script script;
    script.go = dir_ / (name + std::to_string(started) + ".go");
    script.exit = dir_ / (name + std::to_string(started++) + ".exit");
    script.process = std::make_unique<ChildProcess>(
        std::vector<std::string>{
            python, std::string(NEUTRACER_SOURCE_DIR) + "/tests/privileged/py_sites/" + name,
            NEUTRACER_STANDIN_LIBRARY, script.go.string(), script.exit.string(), arg},
        (dir_ / "python.err").string());
    const auto ready = script.process->wait_for_line("ready ", 10s);
    EXPECT_TRUE(ready) << name << " did not start; stderr in " << dir_ / "python.err";
    if (!ready)
      return script;
    std::istringstream words(ready->substr(6));
    words >> script.pid >> script.version;
    const bool traced = eventually(
        [&] {
          return value(scrape(), "neutracer_cuda_memory_used_bytes",
                       {{"pid", script.pid}, {"kind", "device"}}) >= 0;
        },
        10s);
    EXPECT_TRUE(traced) << "daemon never traced " << name << "; log: " << log();
    if (!traced)
      script.pid.clear();
    return script;
  }
  void finish_script(Script &script) {
    std::ofstream(script.exit).put('\n');
    const auto status = script.process->wait_exit(10s);
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  }

  static std::vector<std::string> repeat(const std::vector<std::string> &steps, int count) {
    std::vector<std::string> out;
    for (int i = 0; i < count; ++i)
      out.insert(out.end(), steps.begin(), steps.end());
    return out;
  }
};

TEST_F(CallSitesE2E, FailedAndLeakingAllocationsNameTheirFunctions) {
  // 2 GiB against the stand-in's 1 GiB: out of memory. Then 4 MiB kept every 200 ms for 8 s.
  auto steps = std::vector<std::string>{"oom:2147483648"};
  const auto leak = repeat({"leak:4194304:1", "sleep:200"}, 40);
  steps.insert(steps.end(), leak.begin(), leak.end());
  auto program = start(steps);
  release(program);
  wait_done(program);

  const auto document = sites(program.pid);
  EXPECT_EQ(document["pid"], std::stoi(program.pid));
  EXPECT_EQ(document["stacks"]["enabled"], true);
  const auto oom = site_at(document, "oom_here");
  ASSERT_FALSE(oom.is_null()) << document.dump(1);
  EXPECT_EQ(oom["counts"]["failed_allocations"], 1);
  EXPECT_EQ(oom["counts"]["failed_bytes"], 2147483648ull);
  EXPECT_EQ(oom["counts"]["allocations"], 0);
  // The whole stack: the frame-pointer walk reaches main and the C library under it.
  const auto oom_frames = functions(oom);
  ASSERT_GE(oom_frames.size(), 3u) << oom.dump(1);
  EXPECT_EQ(oom_frames[1], "run_step");
  EXPECT_EQ(oom_frames[2], "main");
  EXPECT_EQ(oom["end"], "complete") << oom.dump(1);
  EXPECT_EQ(oom["truncated"], false);
  EXPECT_TRUE(oom["frames"][0]["module"].get<std::string>().ends_with("/neutracer-sites"));

  const auto leaking = site_at(document, "leak_here");
  ASSERT_FALSE(leaking.is_null()) << document.dump(1);
  EXPECT_EQ(leaking["counts"]["allocations"], 40);
  EXPECT_EQ(leaking["counts"]["live_allocations"], 40);
  EXPECT_EQ(leaking["counts"]["live_bytes"], 40ull * 4194304);
  EXPECT_GE(leaking["counts"]["leak_samples"], 4) << "the leak detector's samples are here";
  EXPECT_EQ(leaking["summary"].get<std::string>().rfind("leak_here (neutracer-sites+0x", 0), 0u)
      << leaking["summary"];

  // Each alert's journal entry points at the code.
  ASSERT_TRUE(eventually([&] { return !journal_entries(kOomMessageId, program.pid).empty(); }, 5s));
  const auto oom_entry = journal_entries(kOomMessageId, program.pid)[0];
  EXPECT_EQ(oom_entry.at("TARGET_CODE_FUNC"), "oom_here");
  EXPECT_TRUE(oom_entry.at("TARGET_CODE_MODULE").ends_with("/neutracer-sites"));
  EXPECT_EQ(oom_entry.at("TARGET_CODE_LOCATION").rfind("neutracer-sites+0x", 0), 0u);
  EXPECT_NE(oom_entry.at("MESSAGE").find(" at oom_here (neutracer-sites+0x"), std::string::npos)
      << oom_entry.at("MESSAGE");
  ASSERT_TRUE(
      eventually([&] { return !journal_entries(kLeakMessageId, program.pid).empty(); }, 5s));
  EXPECT_EQ(journal_entries(kLeakMessageId, program.pid)[0].at("TARGET_CODE_FUNC"), "leak_here");

  // The flame graph and the memory page show the same sites.
  const auto flame = http_get(port_, "/flame?pid=" + program.pid);
  ASSERT_TRUE(flame && flame->status == 200);
  EXPECT_NE(flame->body.find("leak_here"), std::string::npos);
  EXPECT_NE(flame->body.find("<svg"), std::string::npos);
  const auto failed = http_get(port_, "/flame?pid=" + program.pid + "&by=failed_allocations");
  ASSERT_TRUE(failed && failed->status == 200);
  EXPECT_NE(failed->body.find("oom_here"), std::string::npos);
  // Rendered by a real browser: a picture, not a blank page (a blank PNG is a few KB).
  const auto png = fs::path(NEUTRACER_BUILD_DIR) / "flame-graph.png";
  fs::remove(png);
  const std::string command = "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                              "--window-size=1240,420 --screenshot=" +
                              png.string() + " 'http://127.0.0.1:" + std::to_string(port_) +
                              "/flame?pid=" + program.pid + "&by=allocated_bytes' > " +
                              (dir_ / "chromium.log").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << "chromium failed; see " << dir_ / "chromium.log";
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 15000u) << "screenshot looks blank: " << png;
  std::cerr << "flame graph screenshot: " << png << "\n";

  const auto memory = http_get(port_, "/memory?pid=" + program.pid);
  ASSERT_TRUE(memory && memory->status == 200);
  EXPECT_NE(memory->body.find("from leak_here (neutracer-sites+0x"), std::string::npos);
  EXPECT_NE(memory->body.find("from oom_here (neutracer-sites+0x"), std::string::npos);
  finish(program);
}

TEST_F(CallSitesE2E, AWaitInProgressNamesItsSiteAndTheHangAlertToo) {
  auto program = start({"sync:3000"});
  release(program);
  // While it waits: pending at wait_here.
  nlohmann::json waiting;
  ASSERT_TRUE(eventually(
      [&] {
        const auto site = site_at(sites(program.pid), "wait_here");
        if (site.is_null() || site["counts"]["pending_waits"] != 1)
          return false;
        waiting = site;
        return true;
      },
      5s))
      << sites(program.pid).dump(1);
  EXPECT_GT(waiting["counts"]["longest_pending_wait_seconds"].get<double>(), 0);
  EXPECT_EQ(functions(waiting)[1], "run_step");
  ASSERT_TRUE(
      eventually([&] { return !journal_entries(kHangMessageId, program.pid).empty(); }, 5s));
  EXPECT_EQ(journal_entries(kHangMessageId, program.pid)[0].at("TARGET_CODE_FUNC"), "wait_here");
  wait_done(program);
  // Returned: one wait of about 3 s, nothing pending.
  const auto done = site_at(sites(program.pid), "wait_here");
  ASSERT_FALSE(done.is_null());
  EXPECT_EQ(done["counts"]["waits"], 1);
  EXPECT_EQ(done["counts"]["pending_waits"], 0);
  EXPECT_NEAR(done["counts"]["wait_seconds"].get<double>(), 3.0, 0.5);
  finish(program);
}

// The line of a script in tests/privileged/py_sites marked with `mark`.
int marked_line(const std::string &script_name, const std::string &mark) {
  std::ifstream script(std::string(NEUTRACER_SOURCE_DIR) + "/tests/privileged/py_sites/" +
                       script_name);
  std::string line;
  for (int number = 1; std::getline(script, line); ++number)
    if (line.find(mark) != std::string::npos)
      return number;
  return -1;
}
int waiting_line() { return marked_line("wait_script.py", "# the waiting line"); }

TEST_F(CallSitesE2E, APythonWaitNamesTheScriptLineThatWaits) {
  // A Python program calls the stand-in driver through ctypes and waits 3 s in
  // cuCtxSynchronize: its thread's Python frames are read while it waits.
  const int line = waiting_line();
  ASSERT_GT(line, 0);
  auto script = start_script("wait_script.py", "3000");
  ASSERT_FALSE(script.pid.empty());
  const std::string &pid = script.pid;
  ASSERT_TRUE(script.version >= "3.11" && script.version.size() >= 4)
      << NEUTRACER_SITES_PYTHON << " is Python " << script.version
      << ": threads are matched by their native id, which CPython keeps from 3.11 on";
  std::ofstream(script.go).put('\n');
  nlohmann::json waiting;
  ASSERT_TRUE(eventually(
      [&] {
        const auto document = sites(pid);
        for (const auto &site : document["sites"])
          if (site.contains("waiting_python_frames")) {
            waiting = site;
            return true;
          }
        return false;
      },
      5s))
      << sites(pid).dump(1);
  const auto &innermost = waiting["waiting_python_frames"][0];
  EXPECT_EQ(innermost["function"], "wait_for_gpu");
  EXPECT_EQ(innermost["line"], line);
  EXPECT_TRUE(innermost["file"].get<std::string>().ends_with("wait_script.py"));
  EXPECT_EQ(waiting["waiting_python_frames"][1]["function"], "main");
  EXPECT_EQ(waiting["summary"], "wait_for_gpu (wait_script.py:" + std::to_string(line) + ")");
  EXPECT_EQ(waiting["counts"]["pending_waits"], 1);
  ASSERT_TRUE(eventually([&] { return !journal_entries(kHangMessageId, pid).empty(); }, 5s));
  const auto hang = journal_entries(kHangMessageId, pid)[0];
  EXPECT_EQ(hang.at("TARGET_CODE_FUNC"), "wait_for_gpu");
  EXPECT_EQ(hang.at("TARGET_CODE_LINE"), std::to_string(line));
  ASSERT_TRUE(script.process->wait_for_line("waited 0", 10s));
  // Returned: nothing waits, so no Python frames are kept for the site.
  ASSERT_TRUE(eventually(
      [&] {
        const auto document = sites(pid);
        for (const auto &site : document["sites"])
          if (site.contains("waiting_python_frames"))
            return false;
        return true;
      },
      3s));
  finish_script(script);
}

TEST_F(CallSitesE2E, EveryInterpretersWaitIsNamedByTheProbesPythonWalk) {
  // The sync probe takes the Python frames at the call's entry, so a wait names its line on
  // every CPython the walk knows (3.9-3.13), not only where the daemon can match a thread by
  // its native id (3.11+); the completed wait's site keeps them in its stack.
  const int line = waiting_line();
  ASSERT_GT(line, 0);
  std::istringstream list(NEUTRACER_TEST_PYTHONS);
  int interpreters = 0;
  for (std::string python; std::getline(list, python, '|');) {
    SCOPED_TRACE(python);
    ++interpreters;
    auto script = start_script("wait_script.py", "3000", python);
    ASSERT_FALSE(script.pid.empty());
    std::ofstream(script.go).put('\n');
    nlohmann::json waiting;
    ASSERT_TRUE(eventually(
        [&] {
          const auto document = sites(script.pid); // kept: the loop reads inside it
          for (const auto &site : document["sites"])
            if (site.contains("waiting_python_frames"))
              waiting = site;
          return !waiting.is_null();
        },
        5s))
        << "Python " << script.version << ": " << sites(script.pid).dump(1);
    EXPECT_EQ(waiting["waiting_python_frames"][0]["function"], "wait_for_gpu");
    EXPECT_EQ(waiting["waiting_python_frames"][0]["line"], line);
    ASSERT_TRUE(script.process->wait_for_line("waited 0", 10s));
    wait_scans(2);
    nlohmann::json done;
    const auto document = sites(script.pid);
    for (const auto &site : document["sites"])
      if (site["counts"]["waits"].get<int>() > 0)
        done = site;
    ASSERT_FALSE(done.is_null());
    EXPECT_EQ(done["summary"], "wait_for_gpu (wait_script.py:" + std::to_string(line) + ")")
        << "Python " << script.version << ": " << done.dump(1);
    finish_script(script);
  }
  EXPECT_GE(interpreters, 1);
}

TEST_F(CallSitesE2E, PythonAllocationsNameTheScriptLinesThatLeakAndFail) {
  // A Python program allocates through ctypes: 2 GiB (more than the stand-in's 1 GiB), then
  // 4 MiB every 0.2 s and 1 MiB every 0.4 s from another line, kept. The probes walk its Python
  // frames at each allocation's return.
  const int failing = marked_line("alloc_script.py", "# the failing line");
  const int leaking = marked_line("alloc_script.py", "# the leaking line");
  const int smaller = marked_line("alloc_script.py", "# the smaller leak");
  ASSERT_GT(failing, 0);
  ASSERT_GT(leaking, 0);
  ASSERT_GT(smaller, 0);
  auto script = start_script("alloc_script.py", "40");
  ASSERT_FALSE(script.pid.empty());
  const std::string &pid = script.pid;
  wait_scans(2); // its interpreter found and given to the probes
  std::ofstream(script.go).put('\n');
  ASSERT_TRUE(script.process->wait_for_line("failed 2", 10s))
      << "CUDA_ERROR_OUT_OF_MEMORY expected";
  ASSERT_TRUE(script.process->wait_for_line("grown", 30s));
  wait_scans(2);
  const auto document = sites(pid);
  nlohmann::json failed, leaked;
  for (const auto &site : document["sites"]) {
    if (site["counts"]["failed_allocations"].get<int>() > 0)
      failed = site;
    if (site["counts"]["live_bytes"].get<std::uint64_t>() >
        (leaked.is_null() ? 0 : leaked["counts"]["live_bytes"].get<std::uint64_t>()))
      leaked = site;
  }
  ASSERT_FALSE(failed.is_null()) << document.dump(1);
  ASSERT_FALSE(leaked.is_null()) << document.dump(1);
  const auto file = std::string("alloc_script.py:");
  EXPECT_EQ(failed["summary"], "ask_too_much (" + file + std::to_string(failing) + ")")
      << failed.dump(1);
  EXPECT_EQ(leaked["summary"], "grow (" + file + std::to_string(leaking) + ")") << leaked.dump(1);
  EXPECT_EQ(leaked["counts"]["live_allocations"], 40);
  // The mixed stack: Python frames follow the native ones, the caller of each under it.
  const auto names = functions(leaked);
  const auto at = std::find(names.begin(), names.end(), "grow");
  ASSERT_NE(at, names.end()) << leaked.dump(1);
  ASSERT_NE(at + 1, names.end());
  EXPECT_EQ(*(at + 1), "main");
  EXPECT_EQ(leaked["frames"][at - names.begin()]["kind"], "python");
  EXPECT_EQ(leaked["frames"][at - names.begin()]["line"], leaking);
  // The journal's alerts name the same lines.
  ASSERT_TRUE(eventually([&] { return !journal_entries(kOomMessageId, pid).empty(); }, 5s));
  const auto oom = journal_entries(kOomMessageId, pid)[0];
  EXPECT_EQ(oom.at("TARGET_CODE_FUNC"), "ask_too_much");
  EXPECT_EQ(oom.at("TARGET_CODE_LINE"), std::to_string(failing));
  ASSERT_TRUE(eventually([&] { return !journal_entries(kLeakMessageId, pid).empty(); }, 10s))
      << log();
  const auto leak = journal_entries(kLeakMessageId, pid)[0];
  EXPECT_EQ(leak.at("TARGET_CODE_FUNC"), "grow");
  EXPECT_EQ(leak.at("TARGET_CODE_LINE"), std::to_string(leaking));
  // The verdict names its top sites and the bytes still live from each, largest first.
  const auto top = "grow (" + file + std::to_string(leaking) + ")=";
  const auto second = "grow (" + file + std::to_string(smaller) + ")=";
  const auto &sites_field = leak.at("LEAK_SITES");
  EXPECT_EQ(sites_field.rfind(top, 0), 0u) << sites_field;
  EXPECT_NE(sites_field.find("; " + second), std::string::npos) << sites_field;
  EXPECT_NE(leak.at("MESSAGE").find(" live from there; also "), std::string::npos)
      << leak.at("MESSAGE");
  const auto alerts = http_get(port_, "/api/v1/alerts");
  ASSERT_TRUE(alerts && alerts->status == 200);
  const auto recent = nlohmann::json::parse(alerts->body)["recent"];
  const auto notice = std::find_if(recent.begin(), recent.end(), [&](const nlohmann::json &entry) {
    return entry["alert"] == "memory_leak" && std::to_string(entry["pid"].get<int>()) == pid;
  });
  ASSERT_NE(notice, recent.end()) << alerts->body;
  ASSERT_GE((*notice)["sites"].size(), 2u) << notice->dump(1);
  EXPECT_EQ((*notice)["sites"][0]["line"], leaking);
  EXPECT_EQ((*notice)["sites"][1]["line"], smaller);
  EXPECT_GT((*notice)["sites"][0]["live_bytes"], (*notice)["sites"][1]["live_bytes"]);
  // The memory page's blocks name the same lines.
  const auto memory = http_get(port_, "/memory?pid=" + pid);
  ASSERT_TRUE(memory && memory->status == 200);
  EXPECT_NE(memory->body.find("from grow (" + file + std::to_string(leaking) + ")"),
            std::string::npos);
  EXPECT_NE(memory->body.find("from grow (" + file + std::to_string(smaller) + ")"),
            std::string::npos);
  EXPECT_NE(memory->body.find("from ask_too_much (" + file + std::to_string(failing) + ")"),
            std::string::npos);
  finish_script(script);
}

TEST_F(CallSitesE2E, PythonLaunchSamplesNameTheScriptLine) {
  // 20 000 launches through ctypes, 1 in 100 sampled: each sample takes the Python frames too.
  const int launching = marked_line("launch_script.py", "# the launching line");
  ASSERT_GT(launching, 0);
  auto script = start_script("launch_script.py", "20000");
  ASSERT_FALSE(script.pid.empty());
  wait_scans(2); // its interpreter found and given to the probes
  std::ofstream(script.go).put('\n');
  ASSERT_TRUE(script.process->wait_for_line("launched", 60s));
  wait_scans(2);
  const auto document = sites(script.pid);
  nlohmann::json launched;
  for (const auto &site : document["sites"])
    if (site["counts"]["launch_samples"].get<int>() > 0 &&
        (launched.is_null() ||
         site["counts"]["launch_samples"] > launched["counts"]["launch_samples"]))
      launched = site;
  ASSERT_FALSE(launched.is_null()) << document.dump(1);
  EXPECT_EQ(launched["summary"], "launch_many (launch_script.py:" + std::to_string(launching) + ")")
      << launched.dump(1);
  EXPECT_GT(launched["counts"]["launch_samples"].get<int>(), 100);
  finish_script(script);
}

TEST_F(CallSitesE2E, LaunchesAreSampledAtTheirSite) {
  auto program = start({"launch:200000"});
  release(program);
  wait_done(program);
  const auto site = site_at(sites(program.pid), "launch_here");
  ASSERT_FALSE(site.is_null()) << sites(program.pid).dump(1);
  // 1 in 100 on average, at random gaps: about 2000 of 200 000.
  const auto samples = site["counts"]["launch_samples"].get<double>();
  EXPECT_GT(samples, 1500);
  EXPECT_LT(samples, 2500);
  EXPECT_EQ(functions(site)[1], "run_step");
  // Every launch is still counted (unnamed: the program looked its kernel up before tracing).
  EXPECT_EQ(value(scrape(), "neutracer_cuda_kernel_launches_total", {{"pid", program.pid}}),
            200000);
  finish(program);
}

} // namespace
} // namespace neutracer::test
