"""Code the model cache's release Job runs in the cluster."""
