"""Developer tooling: generators of vendored data, mutation testing, benchmarks of the render and the tests."""
