"""Commands an operator runs from a laptop against a real stack."""
