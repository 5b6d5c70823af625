"""Facts about GKE, GCP, Kubernetes, vLLM and KEDA that the program relies on, each with its public source."""
