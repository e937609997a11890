"""Test harness: browser fixtures (filled in by the issue that needs them)."""
