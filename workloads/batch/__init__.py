"""The batch path: OpenAI Batch API files in the stack's bucket, run against the replicas."""
