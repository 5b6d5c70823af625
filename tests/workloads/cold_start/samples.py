"""Samples of what one wake of a replica leaves behind, written from the formats of the programs that print them.

Events (``kubectl get events -o json``, core/v1 Event):
- FailedScheduling, Scheduled ``Successfully assigned %v/%v to %v``: kubernetes/kubernetes
  pkg/scheduler/schedule_one.go.
- TriggeredScaleUp ``pod triggered scale-up: %v``: kubernetes/autoscaler
  cluster-autoscaler/processors/status/eventing_scale_up_processor.go.
- Pulling ``Pulling image %q``, Pulled ``Successfully pulled image %q in %v (%v including waiting).
  Image size: %v bytes.``: kubernetes/kubernetes pkg/kubelet/images/image_manager.go; Created,
  Started: pkg/kubelet/kuberuntime/kuberuntime_container.go.
- ImageStreaming: GKE's image-streaming page (cloud.google.com/kubernetes-engine/docs/how-to/image-streaming).
- A container's events name it in ``involvedObject.fieldPath`` (``spec.containers{name}``,
  ``spec.initContainers{name}``): kubernetes/kubernetes pkg/kubelet/container/ref.go. The compile cache's
  ``gke-gcsfuse/volumes: "true"`` makes GKE's webhook add the Cloud Storage FUSE sidecar
  ``gke-gcsfuse-sidecar`` as a native sidecar (an init container with ``restartPolicy: Always``), which
  the kubelet pulls and starts before vLLM: GoogleCloudPlatform/gcs-fuse-csi-driver v1.24.4
  pkg/webhook/mutatingwebhook.go, pkg/webhook/sidecar_spec.go.

vLLM 0.26.0, as a real run of the stack's command line printed it (one H100, 2026-11-26; the
real logs, trimmed, are the fixtures under tests/real_runs/ and win over these samples), format
``%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s`` with date ``%m-%d %H:%M:%S``
(vllm/logger.py), each process's lines prefixed ``(<name> pid=<pid>) `` (vllm/utils/system_utils.py);
each line names the file and line that printed it:
- ``Starting to load model %s...``: vllm/v1/worker/gpu_model_runner.py:5250
- ``Model loading took %s GiB memory and %.6f seconds``: vllm/v1/worker/gpu_model_runner.py:5347
- ``torch.compile took %.2f s in total``: vllm/compilation/monitor.py:53, once per compiled graph (the
  model's, then the MTP drafter's ``eagle_head``)
- ``Initial profiling/warmup run took %.2f s``: vllm/compilation/monitor.py:81, after each graph's compile
- ``Directly load the compiled graph(s) ...``: vllm/compilation/backends.py:292; ``Directly load AOT
  compilation from path %s``: vllm/compilation/decorators.py:311
- ``GPU KV cache size: %s tokens``: vllm/v1/core/kv_cache_utils.py:2177
- ``Graph capturing finished in %.0f secs, took %.2f GiB``: vllm/v1/worker/gpu_model_runner.py:6844
- ``Starting vLLM server on %s``: vllm/entrypoints/openai/api_server.py:677
- ``Triton kernel JIT compilation during inference: %s. ...`` (WARNING): vLLM's jit_monitor.py:135, as the
  line names it
- uvicorn's access lines, ``INFO:     <client> - "POST /v1/completions HTTP/1.1" 200 OK``
"""

from __future__ import annotations

from typing import Any

NAMESPACE = "llm-serving"
IMAGE = "europe-west4-docker.pkg.dev/my-project/docker-hub/vllm/vllm-openai:v0.18.1"
SIDECAR = "gke-gcsfuse-sidecar"
SIDECAR_IMAGE = "gke.gcr.io/gcs-fuse-csi-driver-sidecar-mounter:v1.24.4-gke.1@sha256:0f9d5b1e"
EARLIER_POD = "vllm-7d9f8c6b5-aaaaa"
POD = "vllm-7d9f8c6b5-x2k9p"


def event(pod: str, reason: str, message: str, at: str, container: str | None = None) -> dict[str, Any]:
    """A pod's event; a container's (``container``: ``spec.containers{vllm}``, ``spec.initContainers{...}``) names it."""
    subject = {"kind": "Pod", "name": pod, "namespace": NAMESPACE} | ({"fieldPath": container} if container else {})
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "involvedObject": subject,
        "reason": reason,
        "message": message,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
        "type": "Normal",
    }


def wake_events(pod: str = POD, *, day: str = "2026-11-23", streamed: bool = True) -> list[dict[str, Any]]:
    """A wake's events, the FUSE sidecar's (pulled and started before vLLM's container) among them."""
    node = "gk3-llm-serving-nap-1a2b3c4d-5e6f"
    group = "https://www.googleapis.com/compute/v1/projects/my-project/zones/europe-west4-b/instanceGroups/gk3-llm-serving-nap-1a2b3c4d-grp"
    vllm, sidecar = "spec.containers{vllm}", f"spec.initContainers{{{SIDECAR}}}"
    events = [
        event(pod, "FailedScheduling", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", f"{day}T12:00:00Z"),
        event(pod, "TriggeredScaleUp", f"pod triggered scale-up: [{{{group} 0->1 (max: 1000)}}]", f"{day}T12:00:09Z"),
        event(pod, "Scheduled", f"Successfully assigned {NAMESPACE}/{pod} to {node}", f"{day}T12:05:31Z"),
        event(pod, "Pulling", f'Pulling image "{SIDECAR_IMAGE}"', f"{day}T12:05:32Z", sidecar),
        event(
            pod,
            "Pulled",
            f'Successfully pulled image "{SIDECAR_IMAGE}" in 1.204s (1.204s including waiting). Image size: 30412288 bytes.',
            f"{day}T12:05:33Z",
            sidecar,
        ),
        event(pod, "Created", f"Created container: {SIDECAR}", f"{day}T12:05:34Z", sidecar),
        event(pod, "Started", f"Started container {SIDECAR}", f"{day}T12:05:35Z", sidecar),
        event(pod, "Pulling", f'Pulling image "{IMAGE}"', f"{day}T12:05:40Z", vllm),
        event(
            pod,
            "Pulled",
            f'Successfully pulled image "{IMAGE}" in 1.812s (1.812s including waiting). Image size: 9213249221 bytes.'
            if streamed
            else f'Successfully pulled image "{IMAGE}" in 1m9.312s (1m9.4s including waiting). Image size: 9213249221 bytes.',
            f"{day}T12:05:42Z" if streamed else f"{day}T12:06:49Z",
            vllm,
        ),
        event(pod, "Created", "Created container: vllm", f"{day}T12:05:44Z" if streamed else f"{day}T12:06:51Z", vllm),
        event(pod, "Started", "Started container vllm", f"{day}T12:05:45Z" if streamed else f"{day}T12:06:52Z", vllm),
    ]
    if streamed:
        events.append(event(pod, "ImageStreaming", f"Image {IMAGE} is backed by image streaming.", f"{day}T12:05:42Z", vllm))
    return events


def events_list(*pods_events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": [e for events in pods_events for e in events]}


def vllm_line(at: str, process: str, source: str, message: str, level: str = "INFO") -> str:
    """One line as `kubectl logs --timestamps` shows it: RFC 3339 time, vLLM's process prefix, its format."""
    own = f"{at[5:7]}-{at[8:10]} {at[11:19]}"
    return f"{at} ({process}) {level} {own} [{source}] {message}"


def access_line(at: str, request: str, status: str = "200 OK") -> str:
    """uvicorn's access line for one request, in the API server's process."""
    return f'{at} ({API}) INFO:     10.8.0.12:41680 - "{request} HTTP/1.1" {status}'


API, DP0, DP1 = "APIServer pid=1", "EngineCore_DP0 pid=412", "EngineCore_DP1 pid=413"
MODEL = "/models/qwen3-5-27b-fp8-1a2b3c4d"
LOADING = f"Starting to load model {MODEL}..."
LOADED = "Model loading took 28.61 GiB memory and {} seconds"
COMPILED = "torch.compile took {} s in total"
PROFILED = "Initial profiling/warmup run took {} s"
KV_CACHE = "GPU KV cache size: 1,234,560 tokens"
CAPTURED = "Graph capturing finished in {} secs, took 3.12 GiB"
SERVING = "Starting vLLM server on http://0.0.0.0:8000"
JIT = (
    "Triton kernel JIT compilation during inference: {}. This causes a latency spike; consider extending warmup to cover this shape/config."
)

# A cold compile cache: two of the eight engines shown; DP1 is the slower one each time. Each engine compiles
# the model's graph, profiles, then compiles and profiles the MTP drafter's; Triton still compiles two kernels
# at the first request, after the server started.
COLD_LOG = "\n".join(
    [
        vllm_line("2026-11-23T12:05:52.104Z", API, "api_utils.py:273", f"non-default args: {{'model': '{MODEL}'}}"),
        vllm_line("2026-11-23T12:06:18.220Z", DP0, "gpu_model_runner.py:5250", LOADING),
        vllm_line("2026-11-23T12:06:19.031Z", DP1, "gpu_model_runner.py:5250", LOADING),
        vllm_line("2026-11-23T12:06:37.410Z", DP0, "gpu_model_runner.py:5347", LOADED.format("19.190412")),
        vllm_line("2026-11-23T12:06:41.007Z", DP1, "gpu_model_runner.py:5347", LOADED.format("21.976018")),
        vllm_line("2026-11-23T12:07:52.530Z", DP0, "monitor.py:53", COMPILED.format("71.52")),
        vllm_line("2026-11-23T12:08:05.882Z", DP1, "monitor.py:53", COMPILED.format("84.40")),
        vllm_line("2026-11-23T12:09:10.000Z", DP0, "monitor.py:81", PROFILED.format("77.47")),
        vllm_line("2026-11-23T12:09:20.500Z", DP1, "monitor.py:81", PROFILED.format("74.62")),
        vllm_line("2026-11-23T12:09:40.100Z", DP0, "monitor.py:53", COMPILED.format("29.60")),
        vllm_line("2026-11-23T12:09:52.300Z", DP1, "monitor.py:53", COMPILED.format("31.80")),
        vllm_line("2026-11-23T12:09:53.000Z", DP0, "monitor.py:81", PROFILED.format("0.90")),
        vllm_line("2026-11-23T12:09:53.250Z", DP1, "monitor.py:81", PROFILED.format("0.95")),
        vllm_line("2026-11-23T12:11:30.100Z", DP0, "kv_cache_utils.py:2177", KV_CACHE),
        vllm_line("2026-11-23T12:11:41.600Z", DP1, "kv_cache_utils.py:2177", KV_CACHE),
        vllm_line("2026-11-23T12:13:01.650Z", DP0, "gpu_model_runner.py:6844", CAPTURED.format(38)),
        vllm_line("2026-11-23T12:13:20.019Z", DP1, "gpu_model_runner.py:6844", CAPTURED.format(41)),
        vllm_line("2026-11-23T12:13:31.224Z", API, "api_server.py:677", SERVING),
        vllm_line("2026-11-23T12:13:31.230Z", API, "launcher.py:37", "Available routes are:"),
        vllm_line("2026-11-23T12:13:31.231Z", API, "launcher.py:46", "Route: /v1/completions, Methods: POST"),
        access_line("2026-11-23T12:13:32.002Z", "GET /health"),
        vllm_line("2026-11-23T12:13:33.100Z", DP0, "jit_monitor.py:135", JIT.format("_causal_conv1d_fwd_kernel"), "WARNING"),
        vllm_line(
            "2026-11-23T12:15:10.500Z", DP0, "jit_monitor.py:135", JIT.format("fused_sigmoid_gating_delta_rule_update_kernel"), "WARNING"
        ),
        access_line("2026-11-23T12:15:13.880Z", "POST /v1/completions"),
        access_line("2026-11-23T12:15:14.100Z", "POST /v1/chat/completions"),
    ]
)

# A later wake that found every cache (torch 2.11's AOT path): each graph loads instead of compiling.
CACHE = "/compile-cache/torch_compile_cache/torch_aot_compile/3f9c0a5e7b"
DIRECT = "Directly load the compiled graph(s) for compile range (1, 16384) from the cache, took 0.455 s"
WARM_LOG = "\n".join(
    [
        vllm_line("2026-11-23T12:06:18.220Z", DP0, "gpu_model_runner.py:5250", LOADING),
        vllm_line("2026-11-23T12:06:37.410Z", DP0, "gpu_model_runner.py:5347", LOADED.format("19.190412")),
        vllm_line("2026-11-23T12:06:49.101Z", DP0, "backends.py:292", DIRECT),
        vllm_line("2026-11-23T12:06:49.802Z", DP0, "decorators.py:311", f"Directly load AOT compilation from path {CACHE}/rank_0_0/model"),
        vllm_line("2026-11-23T12:06:49.990Z", DP0, "monitor.py:53", COMPILED.format("12.40")),
        vllm_line("2026-11-23T12:06:52.000Z", DP0, "monitor.py:81", PROFILED.format("2.01")),
        vllm_line("2026-11-23T12:06:53.100Z", DP0, "monitor.py:53", COMPILED.format("0.30")),
        vllm_line("2026-11-23T12:06:53.102Z", DP0, "monitor.py:81", PROFILED.format("0.00")),
        vllm_line("2026-11-23T12:06:54.650Z", DP0, "kv_cache_utils.py:2177", KV_CACHE),
        vllm_line("2026-11-23T12:07:31.650Z", DP0, "gpu_model_runner.py:6844", CAPTURED.format(37)),
        vllm_line("2026-11-23T12:07:40.224Z", API, "api_server.py:677", SERVING),
        access_line("2026-11-23T12:07:41.900Z", "POST /v1/completions"),
    ]
)
