"""The project's CrossGuard policy pack: `pulumi preview --policy-pack policy` (see policy/README.md)."""
