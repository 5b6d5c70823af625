"""Mutation testing on demand: each module that decides, against the tests that cover it (mutmut).

Usage: ``uv run python -m dev.mutation [module ...]`` (default: every module in MODULES).

Not part of CI: it runs minutes per module. Each module is mutated in its own
copy of the work tree (``build/mutation/<module>/``, kept for ``mutmut show``
and ``mutmut browse`` there), with only the test files listed for it, one
mutant at a time, at a lower priority. The table counts a mutant as detected
when a test failed or it timed out (mutmut's limit is CPU time, so a loaded
machine does not cause timeouts); a mutant no listed test reaches counts as
survived. Mutants listed in EQUIVALENT (by their text, so a renumbering cannot
swap them) behave exactly as the original and are left out of the score;
docs/testing.md gives the reason for each.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
WORK = PROJECT_ROOT / "build" / "mutation"

# Each module, and the test files that test its behaviour without a full render where they can:
# every mutant runs the tests that reach the mutated function, so render-heavy files cost minutes each.
MODULES: dict[str, tuple[str, ...]] = {
    "plan/stack.py": (
        "tests/plan/test_plan.py",
        "tests/plan/test_plan_rules.py",
        "tests/plan/test_plan_specs.py",
        "tests/plan/test_plan_every_key.py",
    ),
    "plan/estimates.py": ("tests/plan/test_estimates_rules.py",),
    "render/changes.py": ("tests/render/test_changes_classes.py",),
    "render/customize_diff.py": ("tests/render/test_customize_diff.py",),
    "render/review.py": ("tests/render/test_review_comment.py", "tests/render/test_cli_rules.py"),
    "render/cluster_model.py": ("tests/render/test_cluster_model_rules.py",),
    "policy/rules.py": ("tests/policy/test_rules_cases.py",),
    "render/awaits.py": ("tests/render/test_awaits.py",),
    "render/refresh.py": ("tests/render/test_refresh_rules.py",),
    "components/capacity.py": ("tests/components/test_capacity_rules.py",),
    "facts/naming.py": ("tests/facts/test_naming.py",),
    "facts/batch_sizing.py": ("tests/facts/test_batch_sizing.py",),
    "facts/engine_memory.py": ("tests/facts/test_engine_memory.py",),
    "render/promql.py": ("tests/render/test_promql.py",),
    "stacks/cron.py": ("tests/stacks/test_cron.py",),
    "stacks/settings.py": ("tests/stacks/test_settings_rules.py",),
    "stacks/serving.py": ("tests/stacks/test_serving_rules.py",),
    "stacks/memory.py": ("tests/stacks/test_memory_rules.py",),
    "stacks/section.py": ("tests/stacks/test_section_rules.py",),
    "stacks/problems.py": ("tests/stacks/test_problems.py",),
    "stacks/loading.py": ("tests/stacks/test_loading.py",),
    "stacks/cluster.py": ("tests/stacks/test_cluster_rules.py",),
    "stacks/maintenance.py": ("tests/stacks/test_cluster_rules.py",),
    "stacks/autoscaling.py": ("tests/stacks/test_autoscaling_rules.py",),
    "stacks/drain.py": ("tests/stacks/test_section_ranges.py",),
    "render/chart.py": ("tests/render/test_chart_rules.py",),
    "policy/guardrails.py": ("tests/policy/test_pack.py", "tests/policy/test_guardrails.py"),
    "render/crd_rules.py": ("tests/render/test_crd_rules_cel.py",),
    "render/provider_rules.py": ("tests/render/test_provider_rules_cases.py",),
    "render/autopilot.py": ("tests/render/test_autopilot_rules.py",),
    "render/lifecycle.py": ("tests/render/test_lifecycle_rules.py",),
    "render/validation.py": ("tests/render/test_validation_rules.py",),
    "render/simulations/scaling.py": ("tests/render/simulations/test_scaling.py", "tests/render/simulations/test_scaling_rules.py"),
    "plan/cold_start_estimate.py": ("tests/plan/test_cold_start_estimate.py", "tests/plan/test_cold_start_figures.py"),
    "facts/gcp.py": ("tests/facts/test_gcp.py",),
    "facts/images.py": ("tests/facts/test_images.py",),
    "facts/kubernetes.py": ("tests/facts/test_kubernetes.py",),
    "facts/metrics.py": ("tests/facts/test_metrics.py",),
    "facts/vllm.py": ("tests/facts/test_vllm.py",),
    "facts/data_files.py": ("tests/facts/test_data_files.py",),
    "ops/batch_submit.py": ("tests/ops/test_batch_submit.py",),
    "ops/batch_file.py": ("tests/ops/test_batch_submit.py",),
    "ops/cold_start.py": ("tests/ops/test_cold_start.py",),
    "render/progress.py": ("tests/render/test_progress_steps.py",),
    "render/files.py": ("tests/render/test_files_rules.py",),
    "render/engine.py": ("tests/render/test_engine_rules.py",),
    "render/cli.py": ("tests/render/test_cli_rules.py",),
    # Components run alone under the mock engine (tests/components/alone.py), workloads and preflight on pure inputs.
    "components/autoscaling.py": ("tests/components/test_autoscaling_rules.py",),
    "components/replicas.py": ("tests/components/test_replicas_rules.py",),
    "components/batch.py": ("tests/components/test_batch_rules.py",),
    "components/model_cache.py": ("tests/components/test_model_cache_rules.py",),
    "components/benchmark.py": ("tests/components/test_benchmark_rules.py",),
    "components/observability.py": ("tests/components/test_observability_rules.py",),
    "components/gateway.py": ("tests/components/test_gateway_rules.py",),
    "components/cluster.py": ("tests/components/test_cluster_rules.py",),
    "components/compile_cache.py": ("tests/components/test_compile_cache_rules.py",),
    "components/registry.py": ("tests/components/test_registry_rules.py",),
    "components/network.py": ("tests/components/test_network_rules.py",),
    "components/apis.py": ("tests/components/test_apis_rules.py",),
    "components/programs.py": ("tests/components/test_programs_rules.py",),
    "components/proxy_subnet.py": ("tests/components/test_proxy_subnet_rules.py",),
    "components/credentials.py": ("tests/components/test_credentials_rules.py",),
    "components/workload_identity.py": ("tests/components/test_workload_identity_rules.py",),
    "components/manifests.py": ("tests/components/test_manifests_rules.py",),
    "components/options.py": ("tests/components/test_options_rules.py",),
    "workloads/batch/lines.py": ("tests/workloads/batch/test_lines.py",),
    "workloads/batch/report.py": ("tests/workloads/batch/test_report.py",),
    "workloads/batch/serving.py": ("tests/workloads/batch/test_serving.py",),
    "workloads/batch/replicas.py": ("tests/workloads/batch/test_replicas_api.py",),
    "workloads/batch/metrics.py": ("tests/workloads/batch/test_metrics_rules.py",),
    "workloads/batch/__main__.py": ("tests/workloads/batch/test_main_rules.py",),
    "workloads/batch/bucket.py": ("tests/workloads/batch/test_bucket_rules.py",),
    # Short batches against the emulator, the vLLM-like server and a stand-in Deployment; never the long timelines.
    "workloads/batch/runner.py": ("tests/workloads/batch/test_runner_rules.py", "tests/workloads/batch/test_budget_race.py"),
    "workloads/cold_start/phases.py": ("tests/workloads/cold_start/test_phases.py",),
    "workloads/benchmark_summary.py": ("tests/components/test_benchmark.py",),
    "workloads/cache_release.py": ("tests/workloads/test_cache_release.py",),
    "workloads/warm_up.py": ("tests/workloads/test_warm_up_rules.py",),
    "preflight/adapt.py": ("tests/preflight/test_adapt.py", "tests/preflight/test_adapt_rules.py"),
    "preflight/drain.py": (
        "tests/preflight/test_drain.py",
        "tests/preflight/test_drain_rules.py",
        # A stand-in engine (fake_vllm.py) in its own process, drained in about 6 s.
        "tests/preflight/test_drain_run.py",
    ),
    "preflight/report.py": ("tests/preflight/test_report.py", "tests/preflight/test_report_rules.py"),
    "preflight/logscan.py": ("tests/preflight/test_logscan.py", "tests/preflight/test_logscan_rules.py"),
    "preflight/probes.py": ("tests/preflight/test_probes.py", "tests/preflight/test_probes_rules.py"),
    "preflight/caches.py": ("tests/preflight/test_caches.py", "tests/preflight/test_caches_rules.py"),
    "preflight/miniature.py": (
        "tests/preflight/test_miniature.py",
        "tests/preflight/test_miniature_rules.py",
        "tests/preflight/test_miniature_kinds.py",
    ),
    "preflight/full_size.py": ("tests/preflight/test_full_size.py",),
    "preflight/rendered.py": ("tests/preflight/test_rendered.py", "tests/preflight/test_rendered_rules.py"),
    "preflight/cli.py": ("tests/preflight/test_cli_rules.py",),
    "preflight/prepare.py": ("tests/preflight/test_prepare_rules.py",),
    "preflight/bench.py": ("tests/preflight/test_bench.py", "tests/preflight/test_bench_rules.py"),
    "preflight/metrics.py": ("tests/preflight/test_metrics.py", "tests/preflight/test_metrics_rules.py"),
    "preflight/engine.py": ("tests/preflight/test_engine_rules.py",),
    "preflight/run.py": ("tests/preflight/test_run_rules.py", "tests/preflight/test_release.py"),
}


@dataclass(frozen=True)
class Equivalent:
    """A mutant that cannot change behaviour: its function and a text only that mutant of the function holds."""

    function: str
    text: str
    reason: str


# Keyed by text, not by mutmut's number: a change of the module renumbers its mutants, and the text
# still finds the same one. Each text must match exactly one mutant of its function, or the run stops
# so that the entry is looked at again (docs/testing.md gives the reason for each).
EQUIVALENT: tuple[Equivalent, ...] = (
    Equivalent("plan.stack.x__reservation_selector", "raise ValueError(None)", "unreachable: the settings refuse it first"),
    Equivalent("plan.stack.x__reservation_selector", '"XXcapacity.reservation', "unreachable: the settings refuse it first"),
    Equivalent("plan.stack.x__reservation_selector", '"CAPACITY.RESERVATION', "unreachable: the settings refuse it first"),
    Equivalent("plan.stack.x_cache_id", 'split("/")[+1]', "a model id is org/name: item 1 is the last"),
    Equivalent("plan.stack.x_cache_id", 'strip("XX-XX")', "the name is lower-cased first: it holds no X"),
    Equivalent("plan.stack.x_scheduling", "assert_never(None)", "unreachable: the capacity mode is a closed type"),
    Equivalent(
        "plan.estimates.x__estimate", "if (scaled_to_zero) and False", "scaled to zero means most replicas 0, so nodes is 0 either way"
    ),
    Equivalent("plan.estimates.x__interpolate", "if nodes < points[0]:", "at a measured point both ways give its value"),
    Equivalent("plan.estimates.x__interpolate", "if nodes > points[-1]:", "at a measured point both ways give its value"),
    Equivalent("plan.estimates.x__interpolate", "if low < nodes <= high:", "at a measured point both ways give its value"),
    Equivalent("plan.estimates.x__interpolate", "if low <= nodes < high:", "at a measured point both ways give its value"),
    Equivalent("plan.estimates.x__interpolate", "raise AssertionError(None)", "unreachable: every count falls in a pair"),
    Equivalent("plan.estimates.x__interpolate", '"XXunreachable', "unreachable: every count falls in a pair"),
    Equivalent("plan.estimates.x__interpolate", '"UNREACHABLE', "unreachable: every count falls in a pair"),
    Equivalent(
        "plan.estimates.x_cost_per_hour", "(price or 1.0)", "a price is positive; only 0 nodes reach the default, and 0 x anything is 0"
    ),
    Equivalent(
        "stacks.cron.x__field",
        "    values: set[int] = set()\n    star = None\n",
        "only a field of commas alone keeps the first value, and schedules are compared with each other, where it reads the same",
    ),
    Equivalent("stacks.cron.x_schedule", "strict=None", "the number of fields was checked equal to FIELDS' just before"),
    Equivalent("stacks.cron.x_schedule", "strict=False", "the number of fields was checked equal to FIELDS' just before"),
    Equivalent("stacks.cron.x_schedule", "zip(fields, FIELDS, )", "the number of fields was checked equal to FIELDS' just before"),
    Equivalent(
        "stacks.settings.xǁStackSettingsǁ_capacity_holds_the_replicas",
        "if (self.max_replicas) or True else 0",
        "a calendar reservation asks for at least 1 node, so a stack at zero is held whether it needs 0 nodes or 1",
    ),
    Equivalent(
        "stacks.settings.xǁStackSettingsǁ_capacity_holds_the_replicas",
        "if self.max_replicas else 1)",
        "a calendar reservation asks for at least 1 node, so a stack at zero is held whether it needs 0 nodes or 1",
    ),
    Equivalent(
        "stacks.settings.xǁStackSettingsǁ_runner_fits_general_purpose",
        "max(self.max_replicas, 2)",
        "with autoscaling on the most replicas is at least 1, and 1 and 2 replicas take one runner worker alike",
    ),
    Equivalent("stacks.settings.xǁStackSettingsǁ_runner_fits_general_purpose", 'if unit > 2 else " vCPU"', "the unit is 1 or 2**30"),
    Equivalent("stacks.settings.xǁStackSettingsǁ_runner_fits_general_purpose", 'if unit > 2 else "")', "the unit is 1 or 2**30"),
    Equivalent("stacks.problems.x_closest", "options, n=2)", "only the closest match is read"),
    Equivalent("stacks.problems.x_closest", "get_close_matches(word, options, )", "only the closest match is read"),
    Equivalent("stacks.problems.x_describe", "include_url=True", "the url is a key of each error that is never read"),
    Equivalent(
        "stacks.maintenance.x_least_available",
        "(a, b, a + ROLLING_PERIOD, b - ROLLING_PERIOD)",
        "the least total is also reached where a span starts at a stretch's end, a candidate either way",
    ),
    Equivalent(
        "stacks.maintenance.x_least_available",
        "(a, b, a - ROLLING_PERIOD, b + ROLLING_PERIOD)",
        "the least total is also reached where a span starts at a stretch's end, a candidate either way",
    ),
    Equivalent("stacks.maintenance.x_least_available", "if first < t < first + _CYCLE", "the first instant is a candidate anyway"),
    Equivalent(
        "stacks.maintenance.x_least_available",
        "if first <= t <= first + _CYCLE",
        "the windows repeat weekly: a span a week after the first holds what the first does",
    ),
    Equivalent("stacks.section.x_utc_time", "raise ValueError(None)", "the same function catches it and raises its own problem"),
    Equivalent("preflight.adapt.x__replace_flag", 'split("=", )[0]', "only the part before the first = is read"),
    Equivalent("preflight.adapt.x__replace_flag", 'split("=", 2)[0]', "only the part before the first = is read"),
    Equivalent("preflight.adapt.x__replace_flag", "    placed = None\n    skip", "None and False are both false"),
    Equivalent("preflight.adapt.x__replace_flag", "    skip = None\n    for", "None and False are both false"),
    Equivalent("preflight.adapt.x__replace_flag", "if skip:\n            skip = None", "None and False are both false"),
    Equivalent("preflight.adapt.x_without_flags", 'split("=", )[0]', "only the part before the first = is read"),
    Equivalent("preflight.adapt.x_without_flags", 'split("=", 2)[0]', "only the part before the first = is read"),
    Equivalent("preflight.adapt.x_without_flags", "    skip = None\n    for", "None and False are both false"),
    Equivalent("preflight.adapt.x_without_flags", "if skip:\n            skip = None", "None and False are both false"),
    Equivalent(
        "preflight.adapt.x_flashinfer_gdn_prefill", "(machine.cuda_runtime_major or 1)", "an unknown runtime is below 13 as 0 or as 1"
    ),
    Equivalent(
        "preflight.adapt.x_adapt",
        "if (machine.capability) or True",
        "unreachable: FlashInfer's prefill is picked only on a GPU whose capability was read",
    ),
    Equivalent(
        "preflight.adapt.x_adapt", '"XXthis GPUXX"', "unreachable: FlashInfer's prefill is picked only on a GPU whose capability was read"
    ),
    Equivalent(
        "preflight.adapt.x_adapt", '"this gpu"', "unreachable: FlashInfer's prefill is picked only on a GPU whose capability was read"
    ),
    Equivalent(
        "preflight.adapt.x_adapt", '"THIS GPU"', "unreachable: FlashInfer's prefill is picked only on a GPU whose capability was read"
    ),
    Equivalent(
        "preflight.adapt.x_adapt",
        "sorted(volumes, key=None, reverse=True)",
        "of two mounts holding a value one is a prefix of the other, so it sorts first by length and by text alike",
    ),
    Equivalent(
        "preflight.adapt.x_adapt",
        "sorted(volumes, reverse=True)",
        "of two mounts holding a value one is a prefix of the other, so it sorts first by length and by text alike",
    ),
    Equivalent("preflight.logscan.x_parse_with_project", "Breakdown(pod=None)", "the breakdown's pod name is never read here"),
    Equivalent("preflight.logscan.x_parse_with_project", '"XXpreflightXX"', "the breakdown's pod name is never read here"),
    Equivalent("preflight.logscan.x_parse_with_project", '"PREFLIGHT"', "the breakdown's pod name is never read here"),
    Equivalent("preflight.drain.x__ended", 'float("INF")', "float reads inf in any case"),
    Equivalent("preflight.caches.x_prepare_start", "exist_ok=None", "the root was removed just before: it never exists here"),
    Equivalent("preflight.caches.x_prepare_start", "exist_ok=False", "the root was removed just before: it never exists here"),
    Equivalent("preflight.caches.x_prepare_start", "mkdir(parents=True, )", "the root was removed just before: it never exists here"),
    Equivalent("preflight.caches.x_summary", ".get(folder, [0, 1])[0]", "only the default's file count is read"),
    Equivalent("preflight.rendered.x_flag_names", 'split("=", )[0]', "only the part before the first = is read"),
    Equivalent("preflight.rendered.x_flag_names", 'split("=", 2)[0]', "only the part before the first = is read"),
    Equivalent("preflight.rendered.x_engine_spec", 'get("readOnly", None)', "bool(None) is False, as bool(False) is"),
    Equivalent("preflight.rendered.x_engine_spec", 'get("readOnly", )', "bool(None) is False, as bool(False) is"),
    Equivalent("preflight.rendered.x_engine_spec", 'get("sizeLimit", None)', "no size is read from 'None', '' or 'XXXX' alike"),
    Equivalent("preflight.rendered.x_engine_spec", 'get("sizeLimit", )', "no size is read from 'None', '' or 'XXXX' alike"),
    Equivalent("preflight.rendered.x_engine_spec", 'get("sizeLimit", "XXXX")', "no size is read from 'None', '' or 'XXXX' alike"),
    Equivalent("preflight.rendered.x__load_yaml", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.rendered.x_queries", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.rendered.x_read_prepared", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.prepare.x_prepare", "check=None", "subprocess.run's check is False by default, and None is false"),
    Equivalent("preflight.prepare.x_prepare", "cwd=root, )", "subprocess.run's check is False by default, and None is false"),
    Equivalent("preflight.prepare.x_prepare", "indent=None", "JSON's whitespace is not read: only a person sees it"),
    Equivalent("preflight.prepare.x_prepare", "indent=2", "JSON's whitespace is not read: only a person sees it"),
    Equivalent("preflight.prepare.x_prepare", 'stack), ) + "\\n"', "JSON's whitespace is not read: only a person sees it"),
    Equivalent("preflight.prepare.x_prepare", "encoding=None", "json.dumps writes ASCII, which any locale's encoding writes alike"),
    Equivalent("preflight.prepare.x_prepare", '+ "\\n", )', "json.dumps writes ASCII, which any locale's encoding writes alike"),
    Equivalent("preflight.prepare.x_prepare", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.prepare.x_prepared", "benchmark_spec(settings, None,", "client 0's command reads neither labels nor image"),
    Equivalent("preflight.prepare.x_prepared", "benchmark_spec(settings, {}, None)", "client 0's command reads neither labels nor image"),
    Equivalent("preflight.bench.x_client_argv", 'given = {arg.split("=", )[0]', "only the part before the first = is read"),
    Equivalent("preflight.bench.x_client_argv", 'given = {arg.split("=", 2)[0]', "only the part before the first = is read"),
    Equivalent("preflight.bench.x_client_argv", 'if arg.split("=", )[0] not in OWN', "only the part before the first = is read"),
    Equivalent("preflight.bench.x_client_argv", 'if arg.split("=", 2)[0] not in OWN', "only the part before the first = is read"),
    Equivalent("preflight.bench.x_run", "check=None", "subprocess.run's check is False by default, and None is false"),
    Equivalent("preflight.bench.x_run", "timeout=timeout, )", "subprocess.run's check is False by default, and None is false"),
    Equivalent("preflight.bench.x_run", 'log.open("w", encoding="UTF-8")', "Python's codec names ignore case"),
    Equivalent("preflight.bench.x_run", 'result.read_text(encoding="UTF-8")', "Python's codec names ignore case"),
    Equivalent("preflight.metrics.x_samples", 'match["labels"] or "XXXX"', "no label is found in 'XXXX', as in ''"),
    Equivalent("preflight.metrics.x_values", 'match["labels"] or "XXXX"', "no label is found in 'XXXX', as in ''"),
    Equivalent(
        "preflight.miniature.x__small_text", '"num_hidden_layers", 3 * period)', "the min around it caps the default at two periods"
    ),
    Equivalent("preflight.miniature.x_corpus", 'yield path.read_text(encoding="UTF-8")', "Python's codec names ignore case"),
    Equivalent("preflight.miniature.x_corpus", '"os.py").read_text(encoding="UTF-8")', "Python's codec names ignore case"),
    Equivalent("preflight.miniature.x__read_json", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.miniature.x__json_text", "indent=None", "JSON's whitespace is not read: only a person sees it"),
    Equivalent("preflight.miniature.x__json_text", "indent=2", "JSON's whitespace is not read: only a person sees it"),
    Equivalent("preflight.miniature.x__json_text", "json.dumps(value, )", "JSON's whitespace is not read: only a person sees it"),
    Equivalent("preflight.miniature.x__write", "encoding=None", "the text is ASCII, which any locale's encoding writes alike"),
    Equivalent("preflight.miniature.x__write", "write_text(text, )", "the text is ASCII, which any locale's encoding writes alike"),
    Equivalent("preflight.miniature.x__write", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.engine.xǁEngineǁ__init__", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.engine.xǁEngineǁwait_ready", "http(None, url", "urllib sends a request without a body as GET"),
    Equivalent("preflight.engine.xǁEngineǁsend_signal", "check=None", "subprocess.run reads check as a truth value, False by default"),
    Equivalent(
        "preflight.engine.xǁEngineǁsend_signal",
        '.name}"], capture_output=True)',
        "subprocess.run reads check as a truth value, False by default",
    ),
    Equivalent("preflight.engine.xǁEngineǁkill", "check=None", "subprocess.run reads check as a truth value, False by default"),
    Equivalent(
        "preflight.engine.xǁEngineǁkill", 'SIGKILL"], capture_output=True)', "subprocess.run reads check as a truth value, False by default"
    ),
    Equivalent("preflight.run.xǁProgressǁ__call__", "flush=None", "stderr is line-buffered and each print ends its line"),
    Equivalent("preflight.run.xǁProgressǁ__call__", "flush=False", "stderr is line-buffered and each print ends its line"),
    Equivalent("preflight.run.xǁProgressǁ__call__", "file=sys.stderr, )", "stderr is line-buffered and each print ends its line"),
    Equivalent("preflight.run.x_installed_release", 'version("VLLM")', "importlib.metadata normalizes a distribution's name"),
    Equivalent("preflight.run.x_probe_machine", "check=None", "subprocess.run reads check as a truth value, False by default"),
    Equivalent("preflight.run.x_probe_machine", "text=True, timeout=300)", "subprocess.run reads check as a truth value, False by default"),
    Equivalent("preflight.run.x_model_of", 'split("@", )[0]', "only the part before the first @ is read"),
    Equivalent("preflight.run.x_model_of", 'split("@", 2)[0]', "only the part before the first @ is read"),
    Equivalent(
        "preflight.run.xǁPreflightǁmake_miniature",
        "env = None\n        done",
        "a child given no env inherits this process's, which dict(os.environ) copies",
    ),
    Equivalent("preflight.run.xǁPreflightǁmake_miniature", "check=None", "subprocess.run reads check as a truth value, False by default"),
    Equivalent(
        "preflight.run.xǁPreflightǁmake_miniature",
        "env=env, timeout=1200)",
        "subprocess.run reads check as a truth value, False by default",
    ),
    Equivalent("preflight.run.xǁPreflightǁread", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.run.xǁPreflightǁstart", "http(None, self.url", "urllib sends a request without a body as GET"),
    Equivalent("preflight.run.xǁPreflightǁstart", 'write_text(text, encoding="UTF-8")', "Python's codec names ignore case"),
    Equivalent("preflight.run.xǁPreflightǁstart", 'read_text(encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent(
        "preflight.run.xǁPreflightǁstart", 'encoding="utf-8", errors=None', "the engine writes its log as UTF-8: no byte to replace"
    ),
    Equivalent(
        "preflight.run.xǁPreflightǁstart", 'encoding="utf-8", ).splitlines', "the engine writes its log as UTF-8: no byte to replace"
    ),
    Equivalent("preflight.run.xǁPreflightǁstart", 'errors="XXreplaceXX"', "the engine writes its log as UTF-8: no byte to replace"),
    Equivalent("preflight.run.xǁPreflightǁstart", 'errors="REPLACE"', "the engine writes its log as UTF-8: no byte to replace"),
    Equivalent(
        "preflight.run.x_execute", "mkdir(parents=None", "Preflight.execute made the folder, parents and all, before anything could refuse"
    ),
    Equivalent(
        "preflight.run.x_execute", "mkdir(parents=False", "Preflight.execute made the folder, parents and all, before anything could refuse"
    ),
    Equivalent(
        "preflight.run.x_execute",
        "mkdir(exist_ok=True)",
        "Preflight.execute made the folder, parents and all, before anything could refuse",
    ),
    Equivalent("preflight.run.x_execute", 'default=str), encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.run.x_execute", 'report.text(result), encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("preflight.probes.x_http", '{"content-type": "application/json"}', "urllib capitalizes header names"),
    Equivalent("preflight.probes.x_http", '{"CONTENT-TYPE": "application/json"}', "urllib capitalizes header names"),
    Equivalent("preflight.probes.x_completion", '{"content-type": "application/json"}', "urllib capitalizes header names"),
    Equivalent("preflight.probes.x_completion", '{"CONTENT-TYPE": "application/json"}', "urllib capitalizes header names"),
    Equivalent("preflight.probes.x_completion", "method=None, headers", "urllib sends a request with a body as POST"),
    Equivalent("preflight.probes.x_completion", "encode(), headers=", "urllib sends a request with a body as POST"),
    Equivalent(
        "components.capacity.x__priority",
        'elif step == "reservation" or spec.reservation is not None',
        "spot and flex-start steps are taken first; a reservation step without a reservation is refused by the settings",
    ),
    Equivalent(
        "plan.cold_start_estimate.x_compile_cache_enabled",
        '"XX0XX"',
        "an unset switch reads as on either way: neither default is a true number",
    ),
    Equivalent("plan.cold_start_estimate.x_sizing", "(now.seconds or 1.0)", "the weights of a cache always have a figure"),
    Equivalent("plan.cold_start_estimate.x_sizing", "(sized.seconds or 1.0)", "the weights of a cache always have a figure"),
    Equivalent(
        "plan.cold_start_estimate.xǁColdStartǁas_output",
        '"coldCompileCache": _minutes(self.seconds(warm=None))',
        "warm is read as a truth value: None takes the cold path, as False does",
    ),
    Equivalent(
        "plan.cold_start_estimate.xǁColdStartǁas_output",
        '"coldCompileCache": self.cost(warm=None)',
        "warm is read as a truth value: None takes the cold path, as False does",
    ),
    Equivalent("ops.cold_start.x_main", "pod=options.pod, )", "measure's default prefix is the replicas' Deployment name, REPLICAS"),
    Equivalent(
        "components.observability.xǁObservabilityǁ__init__",
        "path.rsplit('/', 2)[-1]",
        "two splits from the right leave the same last segment",
    ),
    Equivalent("workloads.batch.replicas.xǁDeploymentApiǁ_get", 'headers={"accept": accept}', "urllib capitalizes header names"),
    Equivalent("workloads.batch.replicas.xǁDeploymentApiǁ_get", 'headers={"ACCEPT": accept}', "urllib capitalizes header names"),
    Equivalent("workloads.batch.replicas.xǁDeploymentApiǁ_get", 'add_header("authorization"', "urllib capitalizes header names"),
    Equivalent("workloads.batch.replicas.xǁDeploymentApiǁ_get", 'add_header("AUTHORIZATION"', "urllib capitalizes header names"),
    Equivalent("workloads.batch.replicas.xǁDeploymentApiǁ__init__", 'rstrip("XX/XX")', "the API's address ends in its port: no X to strip"),
    Equivalent("workloads.batch.serving.x_send", 'rstrip("XX/XX")', "the replicas' base URL ends in /v1: no X to strip"),
    Equivalent("workloads.batch.serving.x_send", '{"content-type": "application/json"}', "HTTP header names are case-insensitive"),
    Equivalent("workloads.batch.serving.x_send", '{"CONTENT-TYPE": "application/json"}', "HTTP header names are case-insensitive"),
    Equivalent("workloads.batch.serving.x_send", 'headers.get("x-request-id")', "aiohttp's response headers ignore case"),
    Equivalent("workloads.batch.serving.x_send", 'headers.get("X-REQUEST-ID")', "aiohttp's response headers ignore case"),
    Equivalent("workloads.batch.serving.x_as_object", 'body = ""', "an empty string is not a dict either: the text is wrapped the same"),
    Equivalent("workloads.cache_release.x__call", '{"authorization": f"Bearer', "urllib capitalizes header names"),
    Equivalent("workloads.cache_release.x__call", '{"AUTHORIZATION": f"Bearer', "urllib capitalizes header names"),
    Equivalent("workloads.cache_release.x__call", '"accept": "application/json"', "urllib capitalizes header names"),
    Equivalent("workloads.cache_release.x__call", '"ACCEPT": "application/json"', "urllib capitalizes header names"),
    Equivalent("workloads.cache_release.x__call", '"content-type": "application/json"', "urllib capitalizes header names"),
    Equivalent("workloads.cache_release.x__call", '"CONTENT-TYPE": "application/json"', "urllib capitalizes header names"),
    Equivalent("workloads.cache_release.x_claim", 'persistentvolumeclaims", None, token', "urllib sends a request with a body as POST"),
    Equivalent("workloads.cache_release.x_snapshot_ready", "_call(url, None, token", "urllib sends a request without a body as GET"),
    Equivalent("workloads.warm_up.x_posted", '{"content-type": "application/json"}', "urllib capitalizes header names"),
    Equivalent("workloads.warm_up.x_posted", '{"CONTENT-TYPE": "application/json"}', "urllib capitalizes header names"),
    Equivalent("workloads.warm_up.x_posted", 'headers["authorization"]', "urllib capitalizes header names"),
    Equivalent("workloads.warm_up.x_posted", 'headers["AUTHORIZATION"]', "urllib capitalizes header names"),
    Equivalent("workloads.batch.metrics.x__shared", "cast(None,", "cast returns its value unchanged at run time"),
    Equivalent("workloads.batch.metrics.x__shared", '"XXSynchronized[int]XX"', "cast returns its value unchanged at run time"),
    Equivalent("workloads.batch.metrics.x__shared", '"synchronized[int]"', "cast returns its value unchanged at run time"),
    Equivalent("workloads.batch.metrics.x__shared", '"SYNCHRONIZED[INT]"', "cast returns its value unchanged at run time"),
    Equivalent(
        "facts.engine_memory.x__layout",
        "recurrent_state_bytes_per_sequence / model.linear_attention_layers //",
        "the floor of a quotient's floor is the floor of the quotient: the same state in bytes",
    ),
    Equivalent("facts.engine_memory.x_engine_memory", "max(available, 1)", "1 byte // a page of at least 16 tokens is 0 blocks too"),
    Equivalent(
        "facts.engine_memory.x_largest_max_num_seqs",
        "(low + high + 2) // 2",
        "a pivot in (low, high] all the same: the search ends at the same count",
    ),
    Equivalent(
        "facts.engine_memory.x_balanced_max_num_seqs",
        "(low + high + 2) // 2",
        "a pivot in (low, high] all the same: the search ends at the same count",
    ),
    Equivalent(
        "facts.engine_memory.x__layout",
        "PREFILL_CHECKPOINT_BLOCKS.get(engine.release, None)",
        "unreachable: every release with facts has its entry (test_engine_memory.py)",
    ),
    Equivalent(
        "facts.engine_memory.x__layout",
        "PREFILL_CHECKPOINT_BLOCKS.get(engine.release, )",
        "unreachable: every release with facts has its entry (test_engine_memory.py)",
    ),
    Equivalent(
        "facts.engine_memory.x__layout",
        "PREFILL_CHECKPOINT_BLOCKS.get(engine.release, 1)",
        "unreachable: every release with facts has its entry (test_engine_memory.py)",
    ),
    Equivalent(
        "facts.engine_memory.x_starts",
        "get(engine.release, None)",
        "unreachable: every release with facts has its entry (test_engine_memory.py)",
    ),
    Equivalent(
        "facts.engine_memory.x_starts",
        "get(engine.release, )",
        "unreachable: every release with facts has its entry (test_engine_memory.py)",
    ),
    Equivalent(
        "facts.engine_memory.x_starts",
        "get(engine.release, False)",
        "unreachable: every release with facts has its entry (test_engine_memory.py)",
    ),
    Equivalent(
        "facts.engine_memory.x_counts_cuda_graphs",
        "get(release, None)",
        "unreachable: every release with facts has its entry (test_engine_memory.py)",
    ),
    Equivalent(
        "facts.engine_memory.x_counts_cuda_graphs",
        "get(release, )",
        "unreachable: every release with facts has its entry (test_engine_memory.py)",
    ),
    Equivalent(
        "facts.engine_memory.x_counts_cuda_graphs",
        "get(release, False)",
        "unreachable: every release with facts has its entry (test_engine_memory.py)",
    ),
    Equivalent("workloads.batch.metrics.x__shared", 'Value("q", )', "a shared value without an initial one is zeroed"),
    Equivalent(
        "workloads.batch.__main__.x_run",
        "time.monotonic() <= deadline",
        "a reading equal to the deadline to the nanosecond adds one 0.1 s nap",
    ),
    Equivalent("workloads.batch.bucket.x_claim", "if previous.until >= now:", "a lease ending at the instant read runs out either way"),
    Equivalent(
        "workloads.batch.runner.x_count_waiting",
        "list_blobs(prefix=None)",
        "no object but a claim is named as a batch key, <input>/<generation>: the others lie under the layout's prefixes",
    ),
    Equivalent(
        "workloads.batch.runner.x_last_cold_start", "pod=None)", "measure's default pod is the last started of vllm, the Deployment's name"
    ),
    Equivalent(
        "workloads.batch.runner.x_last_cold_start",
        "deployment.log(pod), )",
        "measure's default pod is the last started of vllm, the Deployment's name",
    ),
    Equivalent(
        "workloads.batch.runner.x_run_input", "ReplicaCount(0, None)", "the wake's meter reads a count's replicas, never its Ready ones"
    ),
    Equivalent(
        "workloads.batch.runner.x_run_input", "ReplicaCount(0, 1)", "the wake's meter reads a count's replicas, never its Ready ones"
    ),
    Equivalent("workloads.batch.runner.x_run_input", "if (drain_deadline) and False else", "only the first deadline appended is read"),
    Equivalent("workloads.batch.runner.x_run_input", "time.monotonic() >= drain_deadline[0]", "a clock reading equal to the deadline"),
    Equivalent("workloads.batch.runner.x_run_input", "time.time() - last_renewed >= settings", "a clock reading equal to the limit"),
    Equivalent("workloads.batch.runner.x_run_input", "name=None, daemon=True", "a thread's name shows only in a listing of threads"),
    Equivalent(
        "workloads.batch.runner.x_run_input", "Thread(target=keep_claim, daemon=True)", "a thread's name shows only in a listing of threads"
    ),
    Equivalent("workloads.batch.runner.x_run_input", '"XXclaimXX"', "a thread's name shows only in a listing of threads"),
    Equivalent("workloads.batch.runner.x_run_input", '"CLAIM"', "a thread's name shows only in a listing of threads"),
    Equivalent(
        "workloads.batch.runner.x_run_input", 'name="claim", daemon=None', "the keeper is joined before run_input returns or raises"
    ),
    Equivalent("workloads.batch.runner.x_run_input", 'name="claim", )', "the keeper is joined before run_input returns or raises"),
    Equivalent("workloads.batch.runner.x_run_input", "daemon=False", "the keeper is joined before run_input returns or raises"),
    Equivalent("workloads.batch.runner.x__read", "feed.put(None, timeout=None)", "the end mark waits for the reader's next take, or none"),
    Equivalent("workloads.batch.runner.x__read", "feed.put(None, )", "the end mark waits for the reader's next take, or none"),
    Equivalent("workloads.batch.runner.x__read", "feed.put(None, timeout=1.2)", "the end mark waits for the reader's next take, or none"),
    Equivalent("workloads.batch.runner.x__read", "timeout=0.2)\n                return", "the loop is the function's last statement"),
    Equivalent("workloads.batch.runner.x_run_shard", "reading), daemon=None)", "the reader is joined before run_shard returns"),
    Equivalent("workloads.batch.runner.x_run_shard", "reading), )", "the reader is joined before run_shard returns"),
    Equivalent("workloads.batch.runner.x_run_shard", "reading), daemon=False)", "the reader is joined before run_shard returns"),
    Equivalent("workloads.batch.runner.x_wait_for_ready", "time.monotonic() >= deadline", "a clock reading equal to the deadline"),
    Equivalent("workloads.batch.runner.x_wait_for_ready", "time.monotonic() <= pause", "a clock reading equal to the deadline"),
    Equivalent("workloads.batch.runner.x_run_workers", "target=work, name=None)", "a thread's name shows only in a listing of threads"),
    Equivalent("workloads.batch.runner.x_run_workers", '"XXworkerXX"', "a thread's name shows only in a listing of threads"),
    Equivalent("workloads.batch.runner.x_run_workers", "shard), daemon=None)", "every worker process is joined before run_workers returns"),
    Equivalent("workloads.batch.runner.x_run_workers", "shard), )", "every worker process is joined before run_workers returns"),
    Equivalent(
        "workloads.batch.runner.x_run_workers", "shard), daemon=False)", "every worker process is joined before run_workers returns"
    ),
    Equivalent("workloads.benchmark_summary.x__load", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("workloads.benchmark_summary.x__stats_ms", "dict.fromkeys(names, )", "fromkeys' default value is None"),
    Equivalent("workloads.cold_start.phases.x_last_started_pod", 'get("name", None)', "no default name is a pod of the Deployment"),
    Equivalent("workloads.cold_start.phases.x_last_started_pod", 'get("name", )', "no default name is a pod of the Deployment"),
    Equivalent("workloads.cold_start.phases.x_last_started_pod", 'get("name", "XXXX")', "no default name is a pod of the Deployment"),
    Equivalent("workloads.cold_start.phases.x_read_events", "found = None\n    for", "None is false as False is: only an event sets it"),
    Equivalent("workloads.cold_start.phases.x_read_events", 'get("message", None)', "no default message is the kubelet's pull line"),
    Equivalent("workloads.cold_start.phases.x_read_events", 'get("message", )', "no default message is the kubelet's pull line"),
    Equivalent("workloads.cold_start.phases.x_read_events", 'get("message", "XXXX")', "no default message is the kubelet's pull line"),
    Equivalent("workloads.cold_start.phases.x_read_log", "hit = compiled = None", "None is false as False is: only a line sets them"),
    Equivalent("workloads.cold_start.phases.x_read_log", ", seconds), 7)", "vLLM prints these figures with at most six decimals"),
    Equivalent("workloads.cold_start.phases.x_read_log", 'else "XXXX"', "the process name only groups an engine's lines"),
    Equivalent("components.benchmark.x__word", "if (part) or True", "an empty part quotes to '', which adds nothing to the shell word"),
    Equivalent(
        "components.benchmark.x_benchmark_script", '"XXpids=()XX"', "bash's pids+= creates the array: the declaration is not needed"
    ),
    Equivalent("components.benchmark.x_benchmark_script", '"PIDS=()"', "bash's pids+= creates the array: the declaration is not needed"),
    Equivalent("components.benchmark.x_server_root", 'rstrip("XX/XX")', "the Service URL ends in its port or /v1: no X to strip"),
    Equivalent("components.programs.xǁProgramǁfiles", 'encoding="UTF-8"', "Python's codec names ignore case"),
    Equivalent("components.apis.x_serving_api", 'split("/", 2)[0]', "item 0 is the text before the first /, whatever the limit"),
    Equivalent("components.apis.x_serving_api", 'split("/", )[0]', "item 0 is the text before the first /, whatever the limit"),
    Equivalent("components.apis.x_serving_api", 'rsplit("/", 1)[0]', "a pulumi-gcp type token holds one /: gcp:<module>/<resource>:<Type>"),
)

# mutmut's exit codes (mutmut/stats.py, 3.8.1), grouped as the table shows them.
KILLED = {1, 3, -9, -11}
SURVIVED = {0}
NO_TESTS = {5, 33}
TIMEOUT = {-24, 24, 36, 152, 255}


@dataclass(frozen=True)
class Score:
    module: str
    mutants: int
    killed: int
    survived: int
    timeout: int
    no_tests: int
    equivalent: int
    survivors: tuple[str, ...]

    @property
    def score(self) -> float:
        judged = self.mutants - self.equivalent
        return (self.killed + self.timeout) / judged if judged else 1.0


def _slug(module: str) -> str:
    return module.removesuffix(".py").replace("/", "-")


def _work_tree_files() -> list[str]:
    """Tracked and new files of the work tree, as they are now (uncommitted edits included)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (PROJECT_ROOT / name).is_file()]


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def prepare(module: str, tests: tuple[str, ...]) -> Path:
    """A fresh copy of the work tree whose pyproject tells mutmut what to mutate and which tests to run."""
    folder = WORK / _slug(module)
    shutil.rmtree(folder, ignore_errors=True)
    for name in _work_tree_files():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT_ROOT / name, target)
    package = module.split("/", 1)[0]
    # Everything else the tests read (other packages, stack files, schemas, charts) goes along unmutated.
    others = sorted(p.name for p in folder.iterdir() if p.name not in (package, "tests", "pyproject.toml"))
    pyproject = folder / "pyproject.toml"
    if "mutmut" in tomllib.loads(pyproject.read_text()).get("tool", {}):
        raise SystemExit("pyproject.toml already has [tool.mutmut]; dev/mutation.py writes its own per module")
    pyproject.write_text(pyproject.read_text() + mutmut_section(module, others, tests))
    return folder


def mutmut_section(module: str, others: list[str], tests: tuple[str, ...]) -> str:
    """The ``[tool.mutmut]`` table: mutate ``module`` only, copy ``others`` along, run ``tests``."""
    return "\n".join(
        [
            "",
            "[tool.mutmut]",
            f"source_paths = {_toml_list([module.split('/', 1)[0]])}",
            f"only_mutate = {_toml_list([module])}",
            f"also_copy = {_toml_list(others)}",
            f"pytest_add_cli_args_test_selection = {_toml_list(list(tests))}",
            # Every listed test runs, the timeline ones too, which the addopts' marker filter leaves out.
            'pytest_add_cli_args = ["-m", ""]',
            # Pulumi's mock engine runs gRPC threads: forking the process that ran them deadlocks.
            'process_isolation = "forkserver"',
            "",
        ]
    )


def run(folder: Path) -> None:
    mutmut = [sys.executable, "-m", "mutmut"]
    log = folder / "mutmut.log"
    with log.open("w") as out:
        done = subprocess.run([*mutmut, "run", "--max-children", "1"], cwd=folder, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"mutmut failed in {folder} (exit {done.returncode}); see {log}")


def _mutant_sources(folder: Path, module: str) -> dict[str, str]:
    """Each mutant's function source, by its mutmut name, from the mutated copy of ``module``."""
    path = folder / "mutants" / module
    text = path.read_text()
    # By line numbers: ast.get_source_segment splits the whole file again for each of a thousand mutants.
    lines = text.splitlines(keepends=True)
    prefix = module.removesuffix(".py").replace("/", ".")
    return {
        f"{prefix}.{node.name}": "".join(lines[node.lineno - 1 : node.end_lineno])
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name
    }


def equivalents(module: str, sources: dict[str, str]) -> set[str]:
    """The mutants of ``module`` that EQUIVALENT lists, found by their text; a stale or ambiguous entry stops the run."""
    prefix = module.removesuffix(".py").replace("/", ".") + "."
    found: set[str] = set()
    for item in (e for e in EQUIVALENT if e.function.startswith(prefix)):
        matches = [name for name, source in sources.items() if name.startswith(item.function + "__mutmut_") and item.text in source]
        if len(matches) != 1:
            raise SystemExit(
                f"{module}: the equivalent mutant of {item.function} holding {item.text!r} matches {len(matches)} mutants,"
                " not one; look at it again (docs/testing.md)"
            )
        found.add(matches[0])
    return found


def score(module: str, folder: Path) -> Score:
    left_out = equivalents(module, _mutant_sources(folder, module))
    meta = json.loads((folder / "mutants" / f"{module}.meta").read_text())
    codes: dict[str, int | None] = meta["exit_code_by_key"]
    judged = {name: code for name, code in codes.items() if name not in left_out}
    unchecked = [name for name, code in judged.items() if code is None]
    if unchecked:
        raise SystemExit(f"{module}: {len(unchecked)} mutant(s) not checked, e.g. {unchecked[0]}; see {folder / 'mutmut.log'}")
    survivors = tuple(sorted(name for name, code in judged.items() if code in SURVIVED | NO_TESTS))
    return Score(
        module=module,
        mutants=len(codes),
        killed=sum(code in KILLED for code in judged.values()),
        survived=sum(code in SURVIVED for code in judged.values()),
        timeout=sum(code in TIMEOUT for code in judged.values()),
        no_tests=sum(code in NO_TESTS for code in judged.values()),
        equivalent=len(codes) - len(judged),
        survivors=survivors,
    )


def table(scores: list[Score]) -> str:
    lines = [
        "| module | mutants | killed | survived | no tests | timeout | equivalent | score |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| `{s.module}` | {s.mutants} | {s.killed} | {s.survived} | {s.no_tests} | {s.timeout} | {s.equivalent} | {s.score:.1%} |"
        for s in scores
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    unknown = [m for m in argv if m not in MODULES]
    if unknown:
        raise SystemExit(f"not a module this script covers: {', '.join(unknown)}; use one of: {', '.join(MODULES)}")
    os.nice(10)  # the machine is shared: mutants run at a lower priority
    scores = []
    for module in argv or list(MODULES):
        folder = prepare(module, MODULES[module])
        print(f"{module}: mutating in {folder.relative_to(PROJECT_ROOT)} ...", file=sys.stderr, flush=True)
        run(folder)
        found = score(module, folder)
        scores.append(found)
        for name in found.survivors:
            print(f"  survived: {name}", file=sys.stderr)
    print(table(scores))
    return 0 if all(s.score >= 0.85 for s in scores) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
