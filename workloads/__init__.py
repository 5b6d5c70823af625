"""Programs that run in the cluster: the batch runner, the benchmark summary, the cache release, the cold-start phases."""
