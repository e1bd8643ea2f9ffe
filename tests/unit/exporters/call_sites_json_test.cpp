// SPDX-License-Identifier: Apache-2.0
// /api/v1/processes/<pid>/sites and the site an alert names.
#include "exporters/call_sites_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exporters/alert_site.h"

namespace neutracer {
namespace {

Frame native(std::string function, std::string module, std::uint64_t offset) {
  Frame frame;
  frame.address = 0x7f0000000000 + offset;
  if (!function.empty())
    frame.function = std::make_shared<const std::string>(std::move(function));
  frame.module = std::make_shared<const std::string>(std::move(module));
  frame.module_offset = offset;
  frame.function_offset = 18;
  return frame;
}

Frame python_frame(std::string function, std::string file, std::uint32_t line) {
  Frame frame;
  frame.kind = FrameKind::python;
  frame.function = std::make_shared<const std::string>(std::move(function));
  frame.module = std::make_shared<const std::string>(std::move(file));
  frame.line = line;
  return frame;
}

ProcessSitesView view() {
  ProcessSitesView view;
  Site leak;
  leak.stack = std::make_shared<const SymbolizedStack>(
      SymbolizedStack{{native("cudaMalloc", "/usr/lib/libcudart.so.12", 0x4000),
                       native("leak_here", "/opt/app/bin/trainer", 0x1234),
                       native("", "/opt/app/bin/trainer", 0x99)},
                      StackEnd::no_frame_pointer});
  leak.counts.allocations = 3;
  leak.counts.live_bytes = 3 << 20;
  leak.counts.leak_samples = 2;
  Site oom;
  oom.stack = std::make_shared<const SymbolizedStack>(
      SymbolizedStack{{native("oom_here", "/opt/app/bin/trainer", 0x2000)}, StackEnd::complete});
  oom.counts.failed_allocations = 1;
  oom.counts.failed_bytes = 1 << 30;
  Site lost;
  lost.kind = SiteKind::no_stack;
  lost.counts.allocations = 1;
  view.sites = {leak, oom, lost};
  return view;
}

TEST(CallSitesJson, SitesWithFramesAndCounts) {
  const auto text = call_sites_json({42, 7}, "trainer", view(), {true, 64, 1000});
  const auto document = nlohmann::json::parse(text);
  EXPECT_EQ(document["pid"], 42);
  EXPECT_EQ(document["comm"], "trainer");
  EXPECT_EQ(document["stacks"]["max_depth"], 64);
  EXPECT_EQ(document["stacks"]["launch_sample_every"], 1000);
  const auto &sites = document["sites"];
  ASSERT_EQ(sites.size(), 3u);
  // Failures first, then leak samples.
  EXPECT_EQ(sites[0]["id"], 1);
  EXPECT_EQ(sites[0]["end"], "complete");
  EXPECT_EQ(sites[0]["truncated"], false);
  EXPECT_EQ(sites[0]["counts"]["failed_allocations"], 1);
  EXPECT_EQ(sites[0]["frames"][0]["function"], "oom_here");
  const auto &leak = sites[1];
  EXPECT_EQ(leak["kind"], "stack");
  EXPECT_EQ(leak["truncated"], true);
  EXPECT_EQ(leak["end"], "no_frame_pointer");
  EXPECT_EQ(leak["counts"]["live_bytes"], 3 << 20);
  EXPECT_EQ(leak["counts"]["leak_samples"], 2);
  ASSERT_EQ(leak["frames"].size(), 3u);
  EXPECT_EQ(leak["frames"][1]["function"], "leak_here");
  EXPECT_EQ(leak["frames"][1]["module"], "/opt/app/bin/trainer");
  EXPECT_EQ(leak["frames"][1]["module_offset"], "0x1234");
  EXPECT_EQ(leak["frames"][1]["function_offset"], 18);
  EXPECT_EQ(leak["frames"][1]["kind"], "native");
  EXPECT_TRUE(leak["frames"][2]["function"].is_null());
  // The summary skips the CUDA runtime: the program's own frame.
  EXPECT_EQ(leak["summary"], "leak_here (trainer+0x1234)");
  EXPECT_EQ(sites[2]["kind"], "no_stack");
  EXPECT_FALSE(sites[2].contains("frames"));
}

TEST(CallSitesJson, InvalidUtf8InNamesIsReplaced) {
  auto sites = view();
  Site odd;
  odd.stack = std::make_shared<const SymbolizedStack>(
      SymbolizedStack{{native("bad\xff", "/x", 1)}, StackEnd::complete});
  sites.sites.push_back(odd);
  EXPECT_NO_THROW(nlohmann::json::parse(call_sites_json({1, 1}, "x", sites, {})));
}

TEST(AlertSite, NamesTheHeadlineFrame) {
  const auto sites = view();
  const auto site = notice_site(sites.sites[0]);
  ASSERT_TRUE(site.has_value());
  EXPECT_EQ(site->function, "leak_here");
  EXPECT_EQ(site->module, "/opt/app/bin/trainer");
  EXPECT_EQ(site->location, "trainer+0x1234");
  EXPECT_EQ(site->line, 0u);
  EXPECT_EQ(site->text, "leak_here (trainer+0x1234)");
  EXPECT_FALSE(notice_site(sites.sites[2]).has_value()) << "no stack, nothing to name";
}

TEST(AlertSite, AMixedStackIsNamedByItsInnermostPythonFrame) {
  const Frame python = python_frame("train_step", "/srv/train.py", 7);
  Site site;
  site.stack = std::make_shared<const SymbolizedStack>(
      SymbolizedStack{{native("cudaMalloc", "/usr/lib/libcudart.so.12", 1),
                       native("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.11.so", 2), python},
                      StackEnd::complete});
  EXPECT_EQ(headline_frame(*site.stack), &site.stack->frames[2]);
  EXPECT_EQ(notice_site(site)->text, "train_step (train.py:7)");
}

TEST(AlertSite, AWaitReadWhileInProgressIsNamedByItsPythonLine) {
  const Frame python = python_frame("wait_for_gpu", "/srv/train.py", 42);
  const Frame caller = python_frame("main", "/srv/train.py", 50);
  ProcessSitesView sites;
  Site wait;
  wait.stack = std::make_shared<const SymbolizedStack>(
      SymbolizedStack{{native("cuCtxSynchronize", "/usr/lib/libcuda.so.1", 1),
                       native("ffi_call", "/usr/lib/libffi.so.8", 2)},
                      StackEnd::complete});
  wait.counts.pending_waits = 1;
  wait.waiting_python = {python, caller};
  sites.sites = {wait};
  EXPECT_EQ(notice_site(wait)->text, "wait_for_gpu (train.py:42)");
  EXPECT_EQ(notice_site(wait)->line, 42u);
  const auto document = nlohmann::json::parse(call_sites_json({1, 1}, "x", sites, {}));
  const auto &site = document["sites"][0];
  EXPECT_EQ(site["summary"], "wait_for_gpu (train.py:42)");
  ASSERT_EQ(site["waiting_python_frames"].size(), 2u);
  EXPECT_EQ(site["waiting_python_frames"][0]["file"], "/srv/train.py");
  EXPECT_EQ(site["waiting_python_frames"][0]["line"], 42);
  EXPECT_EQ(site["waiting_python_frames"][1]["function"], "main");
  EXPECT_EQ(site["frames"].size(), 2u) << "the native frames stay as they are";
}

TEST(CallSitesJson, WithoutAnAllocatorViewTheDriversCountsRankTheSites) {
  const auto document = nlohmann::json::parse(call_sites_json({1, 1}, "x", view(), {}));
  EXPECT_EQ(document["ranking"]["view"], "driver");
  EXPECT_EQ(document["sites"][0]["id"], 1) << "the failed allocation first";
  EXPECT_FALSE(document["sites"][0].contains("allocator"));
}

TEST(CallSitesJson, TheAllocatorViewsRankingComesFirstAndSaysSo) {
  AllocatorViewSummary allocator;
  allocator.open = true;
  allocator.reason = InvestigationReason::growth;
  allocator.live_bytes = 96 << 20;
  // Site 2 keeps the tensors; site 0 is the step's temporaries; site 7 is gone from the recorder.
  allocator.ranking = {
      {.site = 2, .survivor_bytes = 64 << 20, .live_bytes = 64 << 20, .live_blocks = 16},
      {.site = 7, .survivor_bytes = 8 << 20, .live_bytes = 8 << 20, .live_blocks = 1},
      {.site = 0, .survivor_bytes = 0, .live_bytes = 32 << 20, .live_blocks = 4}};
  const auto document = nlohmann::json::parse(call_sites_json({1, 1}, "x", view(), {}, &allocator));
  EXPECT_EQ(document["ranking"]["view"], "allocator");
  EXPECT_EQ(document["ranking"]["open"], true);
  EXPECT_EQ(document["ranking"]["reason"], "growth");
  EXPECT_EQ(document["ranking"]["live_bytes"], 96 << 20);
  const auto &sites = document["sites"];
  ASSERT_EQ(sites.size(), 3u) << "each site once, the unknown one left out";
  EXPECT_EQ(sites[0]["id"], 2);
  EXPECT_EQ(sites[0]["allocator"]["survivor_bytes"], 64 << 20);
  EXPECT_EQ(sites[0]["allocator"]["live_blocks"], 16);
  EXPECT_EQ(sites[1]["id"], 0);
  EXPECT_EQ(sites[1]["allocator"]["survivor_bytes"], 0);
  EXPECT_EQ(sites[2]["id"], 1) << "then the driver's order for the rest";
  EXPECT_FALSE(sites[2].contains("allocator"));
}

TEST(CallSitesJson, AViewWithAnEmptyRankingKeepsTheDriversOrderAndSaysItLooked) {
  AllocatorViewSummary allocator; // a view that saw no blocks yet
  allocator.open = true;
  const auto document = nlohmann::json::parse(call_sites_json({1, 1}, "x", view(), {}, &allocator));
  EXPECT_EQ(document["ranking"]["view"], "allocator");
  EXPECT_EQ(document["sites"][0]["id"], 1) << "no survivors: the driver's order";
  EXPECT_FALSE(document["sites"][0].contains("allocator"));
}

TEST(AlertSite, AWaitInsideALibraryIsNamedByTheProgramLineThatCalledIt) {
  // As read on an H200: torch.cuda.synchronize() waits inside torch; the script's line is
  // the one to name.
  Site wait;
  wait.counts.pending_waits = 1;
  wait.waiting_python = {
      python_frame("synchronize",
                   "/opt/torch/.venv/lib/python3.12/site-packages/torch/cuda/__init__.py", 1162),
      python_frame("wait_for_gpu", "/work/hang_site.py", 32),
      python_frame("main", "/work/hang_site.py", 92)};
  EXPECT_EQ(notice_site(wait)->text, "wait_for_gpu (hang_site.py:32)");
  ProcessSitesView sites;
  sites.sites = {wait};
  const auto document = nlohmann::json::parse(call_sites_json({1, 1}, "x", sites, {}));
  EXPECT_EQ(document["sites"][0]["summary"], "wait_for_gpu (hang_site.py:32)");
  EXPECT_EQ(document["sites"][0]["waiting_python_frames"][0]["function"], "synchronize")
      << "the frames themselves stay whole, innermost first";
}

TEST(ProgramPythonFrame, SkipsPackagesAndTheStandardLibraryButNotTheProgram) {
  const auto library = [](const char *file) {
    return in_python_library(python_frame("f", file, 1));
  };
  EXPECT_TRUE(library("/usr/lib/python3/dist-packages/numpy/core/numeric.py"));
  EXPECT_TRUE(library("/home/u/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py"));
  EXPECT_TRUE(library("/usr/lib/python3.11/threading.py"));
  EXPECT_TRUE(library("/usr/local/lib/python3.12/concurrent/futures/thread.py"));
  EXPECT_TRUE(library("<frozen runpy>"));
  EXPECT_FALSE(library("/srv/train.py"));
  EXPECT_FALSE(library("/home/u/lib/python_tools.py")) << "a file named like it, not it";
  EXPECT_FALSE(library("/home/u/lib/python_tools/train.py")) << "nor a folder";
  EXPECT_FALSE(library("/home/u/lib/python3-tools/train.py")) << "nor a folder with a digit";
  EXPECT_TRUE(library("/usr/lib/python3/x.py"));
  EXPECT_FALSE(library("train.py"));
  EXPECT_FALSE(in_python_library(native("cudaMalloc", "/usr/lib/python3.11/x.so", 1)));

  const std::vector<Frame> all_library = {
      python_frame("run", "/usr/lib/python3.11/threading.py", 10),
      python_frame("_bootstrap", "/usr/lib/python3.11/threading.py", 20)};
  EXPECT_EQ(program_python_frame(all_library), &all_library[0]) << "the innermost, then";
  const std::vector<Frame> native_only = {native("main", "/usr/bin/app", 1)};
  EXPECT_EQ(program_python_frame(native_only), nullptr);
}

TEST(ProgramPythonFrame, AnInstalledProgramIsNamedByItsOwnPackage) {
  const std::string packages = "/usr/local/lib/python3.12/site-packages/";
  // `vllm serve`: pip's wrapper calls vllm, which calls PyTorch.
  const std::vector<Frame> served = {
      python_frame("synchronize", packages + "torch/cuda/__init__.py", 1162),
      python_frame("execute_model", packages + "vllm/worker/model_runner.py", 1702),
      python_frame("run", packages + "vllm/entrypoints/cli/serve.py", 40),
      python_frame("<module>", "/usr/local/bin/vllm", 8)};
  EXPECT_EQ(program_python_frame(served), &served[1]);
  // python -m trainer, the package installed: runpy, then the package.
  const std::vector<Frame> module = {python_frame("empty", packages + "torch/_refs/__init__.py", 5),
                                     python_frame("step", packages + "trainer/loop.py", 30),
                                     python_frame("<module>", packages + "trainer/__main__.py", 3),
                                     python_frame("_run_code", "<frozen runpy>", 88)};
  EXPECT_EQ(program_python_frame(module), &module[1]);
  // A script of the user's own still wins over everything installed.
  const std::vector<Frame> script = {
      python_frame("synchronize", packages + "torch/cuda/__init__.py", 1162),
      python_frame("wait", "/srv/train.py", 12), python_frame("<module>", "/srv/train.py", 40)};
  EXPECT_EQ(program_python_frame(script), &script[1]);
  // A script in a bin folder ending in .py is the program too.
  const std::vector<Frame> bin_script = {
      python_frame("synchronize", packages + "torch/cuda/__init__.py", 1162),
      python_frame("<module>", "/opt/job/bin/train.py", 9)};
  EXPECT_EQ(program_python_frame(bin_script), &bin_script[1]);
}

TEST(AlertSite, PythonFramesNameFileAndLine) {
  const Frame frame = python_frame("train_step", "/srv/train.py", 42);
  Site site;
  site.stack =
      std::make_shared<const SymbolizedStack>(SymbolizedStack{{frame}, StackEnd::complete});
  const auto notice = notice_site(site);
  ASSERT_TRUE(notice.has_value());
  EXPECT_EQ(notice->line, 42u);
  EXPECT_EQ(notice->location, "/srv/train.py:42");
  EXPECT_EQ(notice->text, "train_step (train.py:42)");
}

} // namespace
} // namespace neutracer
