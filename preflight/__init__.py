"""A one-GPU preflight of a stack's exact vLLM engine: ``python -m preflight <stack>`` (docs/preflight.md).

The modules that run beside the engine (everything here except ``prepare``) use only the
standard library, PyYAML and what vLLM brings, so they run where the project's own
environment (Pulumi, pydantic) is not installed.
"""
