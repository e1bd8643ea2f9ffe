#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Self-test of check_dashboards.py: a broken dashboard is caught, the shipped ones pass.

Run: python3 -m unittest discover -s tests/dashboards -p 'test_*.py'
"""

import contextlib
import copy
import io
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHIPPED = os.path.join(REPO, "grafana", "dashboards")
sys.path.insert(0, HERE)

import check_dashboards  # noqa: E402

DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'job=~"$job",instance=~"$instance"'

SCRAPE = """\
# HELP neutracer_cuda_processes CUDA processes traced.
# TYPE neutracer_cuda_processes gauge
neutracer_cuda_processes 1
# HELP neutracer_cuda_kernel_launches_total Kernel launches.
# TYPE neutracer_cuda_kernel_launches_total counter
neutracer_cuda_kernel_launches_total{pid="1",comm="a",kernel="k"} 10
# HELP neutracer_cuda_memory_used_bytes Memory in use.
# TYPE neutracer_cuda_memory_used_bytes gauge
neutracer_cuda_memory_used_bytes{pid="1",comm="a",kind="device"} 4096
# HELP neutracer_cuda_sync_wait_duration_seconds Sync waits.
# TYPE neutracer_cuda_sync_wait_duration_seconds histogram
neutracer_cuda_sync_wait_duration_seconds_bucket{pid="1",comm="a",api="x",le="+Inf"} 1
neutracer_cuda_sync_wait_duration_seconds_sum{pid="1",comm="a",api="x"} 1
neutracer_cuda_sync_wait_duration_seconds_count{pid="1",comm="a",api="x"} 1
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1
"""


def target(expr, legend="{{instance}}", ref="A"):
    return {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref}


def panel(pid, title, unit, targets, y=0, description="A panel."):
    p = {"id": pid, "type": "timeseries", "title": title, "description": description, "datasource": DS,
         "gridPos": {"h": 8, "w": 12, "x": 0, "y": y},
         "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}, "targets": targets}
    if unit is None:
        del p["fieldConfig"]["defaults"]["unit"]
    return p


def variables():
    return [
        {"type": "datasource", "name": "datasource", "label": "Data source", "query": "prometheus"},
        {"type": "query", "name": "job", "label": "Job", "datasource": DS, "refresh": 2,
         "query": {"query": "label_values(neutracer_build_info, job)"},
         "multi": True, "includeAll": True, "allValue": ".+"},
        {"type": "query", "name": "instance", "label": "Instance", "datasource": DS, "refresh": 2,
         "query": {"query": 'label_values(neutracer_build_info{job=~"$job"}, instance)'},
         "multi": True, "includeAll": True, "allValue": ".+"},
    ]


def good_dashboard():
    return {
        "id": None, "uid": "test-good", "title": "good", "tags": ["neutracer"], "editable": False,
        "schemaVersion": 39,
        "links": [{"type": "dashboards", "asDropdown": True, "tags": ["neutracer"], "title": "more"}],
        "templating": {"list": variables()},
        "annotations": {"list": []},
        "panels": [
            {"id": 1, "type": "row", "title": "Row", "gridPos": {"h": 1, "w": 24, "x": 0, "y": 0}, "panels": []},
            panel(2, "Launches", "ops", [target(
                f"topk(10, sum by (kernel) (rate(neutracer_cuda_kernel_launches_total{{{SEL}}}[$__rate_interval])))",
                "{{kernel}}")], y=1),
            panel(3, "Memory", "bytes", [target(
                f"sum by (instance, pid, comm) (neutracer_cuda_memory_used_bytes{{{SEL}}})", "{{comm}} ({{pid}})")],
                y=9),
            panel(4, "Sync p99", "s", [target(
                "histogram_quantile(0.99, sum by (le) (rate(neutracer_cuda_sync_wait_duration_seconds_bucket"
                f"{{{SEL}}}[$__rate_interval])))", "p99")], y=17),
        ],
    }


def broken_dashboard():
    d = good_dashboard()
    d["uid"] = "test-broken"
    d["__inputs"] = [{"name": "DS_PROMETHEUS", "type": "datasource", "pluginId": "prometheus"}]
    d["panels"] += [
        # Missing unit.
        panel(10, "No unit", None, [target(f"sum(neutracer_cuda_processes{{{SEL}}})", "n")], y=25),
        # rate() over a fixed range.
        panel(11, "Fixed range", "ops", [target(
            f"sum(rate(neutracer_cuda_kernel_launches_total{{{SEL}}}[5m]))", "launches")], y=33),
        # Hard-coded datasource on the panel and the target.
        dict(panel(12, "Hard-coded datasource", "short", [dict(target(
            f"sum(neutracer_cuda_processes{{{SEL}}})", "n"), datasource={"type": "prometheus", "uid": "P1809F7CD0C75ACF3"})],
            y=41), datasource="Prometheus"),
        # A metric the daemon does not export.
        panel(13, "Unknown metric", "bytes", [target(
            f"sum(neutracer_cuda_memory_free_bytes{{{SEL}}})", "free")], y=49),
        # No job/instance filter, a bare counter, a legend without comm, no description.
        panel(14, "Unfiltered", "short", [target(
            "sum by (pid) (neutracer_cuda_kernel_launches_total)", "{{pid}}")], y=57, description=""),
        # ${DS_PROMETHEUS} placeholder.
        dict(panel(15, "DS placeholder", "short", [target(f"sum(neutracer_cuda_processes{{{SEL}}})", "n")], y=65),
             datasource="${DS_PROMETHEUS}"),
        # Unknown unit, kernel legend missing.
        panel(16, "Bad unit", "launches/s", [target(
            f"sum by (kernel) (rate(neutracer_cuda_kernel_launches_total{{{SEL}}}[$__rate_interval]))",
            "kernel")], y=73),
    ]
    return d


def run_checker(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = check_dashboards.main(args)
    return rc, out.getvalue(), err.getvalue()


class BrokenDashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dashcheck-")
        cls.dir = os.path.join(cls.tmp, "dashboards")
        os.mkdir(cls.dir)
        with open(os.path.join(cls.dir, "broken.json"), "w") as f:
            json.dump(broken_dashboard(), f, indent=2)
        cls.scrape = os.path.join(cls.tmp, "scrape.prom")
        with open(cls.scrape, "w") as f:
            f.write(SCRAPE)
        cls.rc, cls.out, cls.err = run_checker([cls.dir, "--scrape", cls.scrape])
        cls.lines = cls.out.splitlines()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def assertReported(self, panel_title, fragment):
        hits = [l for l in self.lines if l.startswith("broken.json: ")
                and (panel_title is None or f'panel "{panel_title}"' in l) and fragment in l]
        self.assertTrue(hits, f"no violation for panel {panel_title!r} containing {fragment!r}; got:\n"
                        + "\n".join(self.lines))

    def test_exit_status(self):
        self.assertEqual(self.rc, 1)

    def test_missing_unit(self):
        self.assertReported("No unit", "missing fieldConfig.defaults.unit")

    def test_unknown_unit(self):
        self.assertReported("Bad unit", 'unknown unit "launches/s"')

    def test_rate_without_rate_interval(self):
        self.assertReported("Fixed range", "rate() uses [5m]: use [$__rate_interval]")

    def test_hard_coded_datasource(self):
        self.assertReported("Hard-coded datasource", "panel datasource must be")
        self.assertReported("Hard-coded datasource", "target datasource must be")

    def test_ds_placeholder_and_inputs(self):
        self.assertReported(None, '"__inputs" present')
        self.assertReported(None, '"${DS_PROMETHEUS}" placeholder')

    def test_unknown_metric_against_scrape(self):
        self.assertReported("Unknown metric", 'metric "neutracer_cuda_memory_free_bytes" is not a family in')

    def test_histogram_bucket_matches_family(self):
        self.assertFalse([l for l in self.lines if "sync_wait_duration_seconds_bucket" in l], self.lines)

    def test_job_instance_filter(self):
        self.assertReported("Unfiltered", 'must filter job=~"$job",instance=~"$instance"')

    def test_bare_counter(self):
        self.assertReported("Unfiltered", 'counter "neutracer_cuda_kernel_launches_total" must be wrapped')

    def test_pid_legend(self):
        self.assertReported("Unfiltered", 'legendFormat must show processes as "{{comm}} ({{pid}})"')

    def test_missing_description(self):
        self.assertReported("Unfiltered", "missing description")

    def test_kernel_legend(self):
        self.assertReported("Bad unit", "grouped by kernel: legendFormat must show {{kernel}}")

    def test_good_panels_are_clean(self):
        for title in ("Launches", "Memory", "Sync p99", "Row"):
            self.assertFalse([l for l in self.lines if f'panel "{title}"' in l], self.lines)


class DashboardLevelTest(unittest.TestCase):
    def check(self, dash):
        tmp = tempfile.mkdtemp(prefix="dashcheck-")
        try:
            with open(os.path.join(tmp, "d.json"), "w") as f:
                json.dump(dash, f)
            return run_checker([tmp])
        finally:
            shutil.rmtree(tmp)

    def test_good_dashboard_passes(self):
        rc, out, _ = self.check(good_dashboard())
        self.assertEqual((rc, out), (0, ""))

    def test_missing_variables_uid_tags_links(self):
        d = good_dashboard()
        d["templating"]["list"] = d["templating"]["list"][:1]
        d["uid"] = "x"
        d["tags"] = []
        d["links"] = []
        d["editable"] = True
        rc, out, _ = self.check(d)
        self.assertEqual(rc, 1)
        for fragment in ('missing "job" query variable', 'missing "instance" query variable', '"uid" must be',
                         'tags must include "neutracer"', 'asDropdown', '"editable" must be false'):
            self.assertIn(fragment, out)

    def test_query_variable_datasource_and_options(self):
        d = good_dashboard()
        job = d["templating"]["list"][1]
        job["datasource"] = "Prometheus"
        job["multi"] = False
        job["allValue"] = None
        rc, out, _ = self.check(d)
        self.assertEqual(rc, 1)
        self.assertIn('variable "job": datasource must be', out)
        self.assertIn('variable "job": "multi" must be true', out)
        self.assertIn('variable "job": "allValue" must be ".+"', out)

    def test_process_link_needs_pid(self):
        d = good_dashboard()
        d["panels"][2]["fieldConfig"]["defaults"]["links"] = [
            {"title": "x", "url": "/d/neutracer-process/neutracer-process?var-pid=1"}]
        rc, out, _ = self.check(d)
        self.assertEqual(rc, 1)
        self.assertIn('data link to dashboard uid "neutracer-process", which is not in the directory', out)
        self.assertIn("must pass var-pid=${__field.labels.pid}", out)

    def test_daemon_page_links(self):
        d = good_dashboard()
        d["links"].append({"type": "link", "title": "flame", "url": "http://${instance}/flame?pid=${pid}"})
        d["panels"][2]["fieldConfig"]["defaults"]["links"] = [
            {"title": "memory", "url": "http://${__field.labels.instance:raw}/memory?pid=1"}]
        rc, out, _ = self.check(d)
        self.assertEqual(rc, 1)
        self.assertIn("dashboard links: link to the daemon's /flame must take its host from the instance", out)
        self.assertIn("link to the daemon's /memory must pass pid=${pid}", out)
        d["links"][-1]["url"] = "http://${instance:raw}/flame?pid=${pid}"
        d["panels"][2]["fieldConfig"]["defaults"]["links"][0]["url"] = (
            "http://${__field.labels.instance:raw}/memory?pid=${__field.labels.pid}")
        self.assertEqual(self.check(d)[:2], (0, ""))

    def test_list_metrics(self):
        tmp = tempfile.mkdtemp(prefix="dashcheck-")
        try:
            with open(os.path.join(tmp, "d.json"), "w") as f:
                json.dump(good_dashboard(), f)
            rc, out, _ = run_checker([tmp, "--list-metrics"])
        finally:
            shutil.rmtree(tmp)
        self.assertEqual(rc, 0)
        self.assertEqual(out.splitlines(), [
            "neutracer_build_info", "neutracer_cuda_kernel_launches_total", "neutracer_cuda_memory_used_bytes",
            "neutracer_cuda_sync_wait_duration_seconds_bucket"])


POD = 'namespace=~"$namespace",pod=~"$pod"'
GPU = 'gpu=~"$gpu"'


def label_variables(all_value=".*"):
    common = {"type": "query", "datasource": DS, "refresh": 2, "multi": True, "includeAll": True,
              "allValue": all_value}
    return [
        dict(common, name="gpu",
             query={"query": 'label_values(neutracer_cuda_memory_used_bytes{job=~"$job",instance=~"$instance"}, gpu)'}),
        dict(common, name="namespace",
             query={"query": 'label_values(neutracer_cuda_memory_used_bytes{job=~"$job",instance=~"$instance"}, namespace)'}),
        dict(common, name="pod", query={"query": 'label_values(neutracer_cuda_memory_used_bytes'
                                                 '{job=~"$job",instance=~"$instance",namespace=~"$namespace"}, pod)'}),
    ]


def scoped_dashboard():
    """A node dashboard with gpu, namespace and pod variables, every selector filtered right."""
    d = good_dashboard()
    d["uid"] = "test-scoped"
    d["templating"]["list"] += label_variables()
    d["panels"] = [
        panel(1, "Memory by GPU", "bytes", [
            target(f'sum by (instance, gpu) (neutracer_cuda_memory_used_bytes{{{SEL},{POD},{GPU},kind=~"device|vmm"}})',
                   "{{instance}} gpu {{gpu}}", "A"),
            target(f"sum by (instance, gpu) (neutracer_gpu_memory_used_bytes{{{SEL},{GPU}}})",
                   "{{instance}} gpu {{gpu}} NVML", "B")]),
        # A device-wide comparison: our sum must not lose other pods, so no pod filter.
        panel(2, "Untracked memory", "bytes", [target(
            f"sum by (instance, gpu) (neutracer_gpu_memory_used_bytes{{{SEL},{GPU}}})"
            f" - sum by (instance, gpu) (neutracer_cuda_memory_used_bytes{{{SEL},{GPU}}})",
            "{{instance}} gpu {{gpu}}")], y=8),
        # No gpu label on detector series: pod filters only.
        panel(3, "Leaks", "short", [target(
            f"max by (instance, pid, comm) (neutracer_cuda_memory_leak_suspected{{{SEL},{POD}}})",
            "{{comm}} ({{pid}})")], y=16),
        panel(4, "Pods", "bytes", [target(
            f"sum by (namespace, pod) (neutracer_cuda_memory_used_bytes{{{SEL},{POD},{GPU}}})"
            f" * on (namespace, pod) group_left () max by (namespace, pod) (neutracer_container_info{{{SEL},{POD}}})",
            "{{namespace}}/{{pod}}")], y=24),
        panel(5, "Processes", "short", [target(f"sum(neutracer_cuda_processes{{{SEL}}})", "n")], y=32),
    ]
    return d


class LabelScopeTest(unittest.TestCase):
    """gpu, namespace and pod variables: filtered where the family has the label, only there."""

    def check(self, dash):
        tmp = tempfile.mkdtemp(prefix="dashcheck-")
        try:
            with open(os.path.join(tmp, "d.json"), "w") as f:
                json.dump(dash, f)
            return run_checker([tmp])
        finally:
            shutil.rmtree(tmp)

    def test_scoped_dashboard_passes(self):
        rc, out, _ = self.check(scoped_dashboard())
        self.assertEqual((rc, out), (0, ""))

    def test_missing_filters(self):
        d = scoped_dashboard()
        d["panels"][0]["targets"][0]["expr"] = f"sum by (instance, gpu) (neutracer_cuda_memory_used_bytes{{{SEL}}})"
        d["panels"][2]["targets"][0]["expr"] = \
            f'max by (instance, pid, comm) (neutracer_cuda_memory_leak_suspected{{{SEL},namespace=~"$namespace"}})'
        d["panels"][1]["targets"][0]["expr"] = \
            f"sum by (instance, gpu) (neutracer_gpu_memory_used_bytes{{{SEL}}}) - sum by (instance, gpu) " \
            f"(neutracer_cuda_memory_used_bytes{{{SEL},{GPU}}})"
        rc, out, _ = self.check(d)
        self.assertEqual(rc, 1)
        self.assertIn('panel "Memory by GPU" target A: selector "neutracer_cuda_memory_used_bytes" must filter '
                      'gpu=~"$gpu"', out)
        self.assertIn('panel "Memory by GPU" target A: selector "neutracer_cuda_memory_used_bytes" must filter '
                      'namespace=~"$namespace",pod=~"$pod"', out)
        self.assertIn('panel "Leaks" target A: selector "neutracer_cuda_memory_leak_suspected" must filter '
                      'pod=~"$pod"', out)
        self.assertIn('panel "Untracked memory" target A: selector "neutracer_gpu_memory_used_bytes" must filter '
                      'gpu=~"$gpu"', out)
        # The device-wide comparison still needs no pod filter.
        self.assertNotIn('"Untracked memory" target A: selector "neutracer_cuda_memory_used_bytes" must filter '
                         'namespace', out)

    def test_matchers_on_absent_labels(self):
        d = scoped_dashboard()
        d["panels"][2]["targets"][0]["expr"] = \
            f"max by (instance, pid, comm) (neutracer_cuda_memory_leak_suspected{{{SEL},{POD},{GPU}}})"
        d["panels"][1]["targets"][0]["expr"] = \
            f"sum by (instance, gpu) (neutracer_gpu_memory_used_bytes{{{SEL},{GPU},{POD}}})"
        d["panels"][4]["targets"][0]["expr"] = f'sum(neutracer_cuda_processes{{{SEL},pod=~"$pod"}})'
        rc, out, _ = self.check(d)
        self.assertEqual(rc, 1)
        self.assertIn('panel "Leaks" target A: selector "neutracer_cuda_memory_leak_suspected" has a gpu matcher, '
                      'but the family has no gpu label', out)
        for label in ("namespace", "pod"):
            self.assertIn(f'panel "Untracked memory" target A: selector "neutracer_gpu_memory_used_bytes" has a '
                          f'{label} matcher, but the family has no {label} label', out)
        self.assertIn('panel "Processes" target A: selector "neutracer_cuda_processes" has a pod matcher', out)

    def test_gpu_matcher_needs_no_variable(self):
        # A literal gpu matcher on a family without gpu is wrong on any dashboard.
        d = good_dashboard()
        d["panels"][2]["targets"][0]["expr"] = \
            f'sum by (instance, pid, comm) (neutracer_cuda_memcpy_throughput_bytes_per_second{{{SEL},gpu="0"}})'
        rc, out, _ = self.check(d)
        self.assertEqual(rc, 1)
        self.assertIn('selector "neutracer_cuda_memcpy_throughput_bytes_per_second" has a gpu matcher', out)

    def test_variables_all_value_matches_absent_labels(self):
        d = scoped_dashboard()
        d["templating"]["list"] = variables() + label_variables(all_value=".+")
        d["templating"]["list"][-1]["multi"] = False
        rc, out, _ = self.check(d)
        self.assertEqual(rc, 1)
        for name in ("gpu", "namespace", "pod"):
            self.assertIn(f'variable "{name}": "allValue" must be ".*" (All must also match series without the '
                          f'{name} label), got \'.+\'', out)
        self.assertIn('variable "pod": "multi" must be true', out)

    def test_no_label_variables_no_label_filters_required(self):
        d = scoped_dashboard()
        d["templating"]["list"] = variables()
        for p in d["panels"]:
            for t in p["targets"]:
                t["expr"] = t["expr"].replace(f",{POD}", "").replace(f",{GPU}", "")
        rc, out, _ = self.check(d)
        self.assertEqual((rc, out), (0, ""))


class PromtoolTest(unittest.TestCase):
    @unittest.skipUnless(shutil.which("promtool"), "promtool not installed")
    def test_syntax_error_reported(self):
        d = good_dashboard()
        d["panels"][1]["targets"][0]["expr"] = f"sum(rate(neutracer_cuda_kernel_launches_total{{{SEL}}}[$__rate_interval])"
        tmp = tempfile.mkdtemp(prefix="dashcheck-")
        try:
            with open(os.path.join(tmp, "d.json"), "w") as f:
                json.dump(d, f)
            rc, out, _ = run_checker([tmp, "--promtool", shutil.which("promtool")])
        finally:
            shutil.rmtree(tmp)
        self.assertEqual(rc, 1)
        self.assertIn('d.json: panel "Launches" target A: promtool: could not parse expression', out)

    @unittest.skipUnless(shutil.which("promtool"), "promtool not installed")
    def test_shipped_dashboards_parse(self):
        rc, out, err = run_checker([SHIPPED, "--promtool", shutil.which("promtool")])
        self.assertEqual(rc, 0, out + err)


class LexerTest(unittest.TestCase):
    def test_selectors_and_grouping(self):
        p = check_dashboards.ParsedExpr(
            'sum by (kernel) (rate(a_total{job=~"$job",x="y,z}"}[$__rate_interval])) / on(pid) group_left(comm) b')
        self.assertEqual([s.name for s in p.selectors], ["a_total", "b"])
        self.assertEqual(p.selectors[0].matchers, [("job", "=~", "$job"), ("x", "=", "y,z}")])
        self.assertEqual(p.grouped_labels(), {"kernel", "pid", "comm"})
        self.assertTrue(p.inside_rate(p.selectors[0].index))
        self.assertFalse(p.inside_rate(p.selectors[1].index))

    def test_scrape_families(self):
        fams = check_dashboards.parse_scrape_families(SCRAPE)
        self.assertIn("neutracer_cuda_sync_wait_duration_seconds_bucket", fams)
        self.assertNotIn("neutracer_cuda_memory_used_bytes_bucket", fams)


class ShippedDashboardsTest(unittest.TestCase):
    def test_shipped_dashboards_pass(self):
        rc, out, err = run_checker([SHIPPED])
        self.assertEqual(rc, 0, out + err)

    def test_shipped_process_dashboard_links_to_daemon_pages(self):
        """The process dashboard opens the daemon's flame graph and memory timeline."""
        with open(os.path.join(SHIPPED, "neutracer-process.json")) as f:
            text = f.read()
        for page in ("flame", "memory"):
            self.assertIn(f'"http://${{instance:raw}}/{page}?pid=${{pid}}"', text)
            self.assertIn(f'"http://${{__data.fields.instance:raw}}/{page}?pid=${{__data.fields.pid}}"', text)

    def test_shipped_uids(self):
        uids = {}
        for name in sorted(os.listdir(SHIPPED)):
            if name.endswith(".json"):
                with open(os.path.join(SHIPPED, name)) as f:
                    uids[name] = json.load(f)["uid"]
        self.assertEqual(uids, {"neutracer-daemon.json": "neutracer-daemon",
                                "neutracer-node-overview.json": "neutracer-node",
                                "neutracer-process.json": "neutracer-process"})

    def test_shipped_label_variables(self):
        """Node and process dashboards filter by namespace, pod and GPU; All matches absent labels."""
        for name in ("neutracer-node-overview.json", "neutracer-process.json"):
            with open(os.path.join(SHIPPED, name)) as f:
                variables = {v["name"]: v for v in json.load(f)["templating"]["list"]}
            for var in ("namespace", "pod", "gpu"):
                self.assertIn(var, variables, name)
                self.assertEqual((variables[var]["multi"], variables[var]["includeAll"], variables[var]["allValue"]),
                                 (True, True, ".*"), f"{name}: {var}")

    def test_shipped_node_overview_has_gpu_and_pod_panels(self):
        with open(os.path.join(SHIPPED, "neutracer-node-overview.json")) as f:
            dash = json.load(f)
        checker = check_dashboards.Checker()
        titles = {title for _, title in checker.walk_panels(dash["panels"])}
        for title in ("GPU memory used by GPU", "GPU memory NVML sees that neutracerd does not",
                      "Kernel launches by GPU", "Transfer throughput by GPU", "GPU utilisation (NVML)",
                      "GPU temperature (NVML)", "GPU power (NVML)", "GPU memory per pod"):
            self.assertIn(title, titles)

    def test_shipped_dashboards_use_only_readme_metrics(self):
        """Every neutracer_* name the dashboards use is in docs/metrics.md's metric tables."""
        with open(os.path.join(REPO, "docs", "metrics.md"), encoding="utf-8") as f:
            documented = readme_metric_names(f.read())
        rc, out, _ = run_checker([SHIPPED, "--list-metrics"])
        self.assertEqual(rc, 0)
        missing = [n for n in out.split() if n.startswith("neutracer_")
                   and (n[: -len("_bucket")] if n.endswith("_bucket") else n) not in documented]
        self.assertEqual(missing, [])


def readme_metric_names(readme):
    """Names in the metric table rows; "`neutracer_a_b_c`, `_d`" also yields neutracer_a_d, neutracer_a_b_d."""
    names = set()
    for line in readme.splitlines():
        if not line.startswith("| `neutracer_"):
            continue
        cell = line.split("|")[1]
        items = re.findall(r"`([A-Za-z0-9_]+)`", cell)
        full = [i for i in items if i.startswith("neutracer_")]
        names.update(full)
        for short in (i for i in items if i.startswith("_")):
            for f in full:
                parts = f.split("_")
                for k in range(2, len(parts)):
                    names.add("_".join(parts[:k]) + short)
    return names


if __name__ == "__main__":
    unittest.main()
