"""How a replica started, phase by phase, read from its pod events and vLLM log."""
