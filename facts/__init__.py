"""Facts about GKE, GCP, Kubernetes, vLLM and KEDA that the program relies on, each with its public source,
and the program's own names and runner sizing, which every layer above reads."""
