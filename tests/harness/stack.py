"""Test harness: stack fixtures (filled in by the issue that needs them)."""
