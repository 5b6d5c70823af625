"""The drain section: how a replica stops."""

from __future__ import annotations

from pydantic import Field

from facts.gke import SPOT_GRACE_SECONDS
from facts.vllm import SHUTDOWN_TEARDOWN_SECONDS
from stacks.section import Section

# On SIGTERM vLLM's HTTP server closes its port at once (connections are refused, no 503), so the pod must be
# out of every endpoint list first. Endpoint removal runs beside the preStop hook, not before it: the
# EndpointSlice controller marks the pod terminating, then every node's kube-proxy and the endpoint picker
# must see it (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination,
# https://kubernetes.io/docs/tutorials/services/pods-and-endpoint-termination-flow/). The pause is at least this.
ENDPOINT_REMOVAL_SECONDS = 5


class DrainSettings(Section):
    """How a replica stops: endpoints drop it first, then vLLM finishes what it is serving, then it tears down."""

    pre_stop_seconds: int = Field(default=10, ge=ENDPOINT_REMOVAL_SECONDS, le=120)
    """Time for the Service, the load balancer and the endpoint picker to stop sending to a stopping pod."""
    shutdown_timeout_seconds: int = Field(default=35, ge=0, le=3600)
    """vLLM's --shutdown-timeout: how long in-flight requests may finish (a reference one: ~5.6 s to first token + 512 x 46 ms)."""

    def grace_seconds(self) -> int:
        """The pod's grace off Spot: the pause, vLLM's drain and its teardown."""
        return self.pre_stop_seconds + self.shutdown_timeout_seconds + SHUTDOWN_TEARDOWN_SECONDS

    def on_spot(self) -> tuple[int, int]:
        """(pause, shutdown timeout) under Spot's grace: what the stack set, else the shortest pause and the rest for vLLM."""
        pre_stop = self.pre_stop_seconds if "pre_stop_seconds" in self.model_fields_set else ENDPOINT_REMOVAL_SECONDS
        rest = SPOT_GRACE_SECONDS - SHUTDOWN_TEARDOWN_SECONDS - pre_stop
        return pre_stop, self.shutdown_timeout_seconds if "shutdown_timeout_seconds" in self.model_fields_set else rest
