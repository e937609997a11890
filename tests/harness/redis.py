"""Test harness: redis fixtures (filled in by the issue that needs them)."""
