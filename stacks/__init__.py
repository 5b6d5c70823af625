"""The stack's settings: the schema of ``Pulumi.<stack>.yaml``, its cross-field rules, loading and error reporting."""
