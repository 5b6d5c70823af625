"""Code that runs inside the benchmark Job (shipped to it in a ConfigMap)."""
