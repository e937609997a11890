"""Test harness: mediawiki fixtures (filled in by the issue that needs them)."""
