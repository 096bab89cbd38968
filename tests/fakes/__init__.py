"""Test doubles that speak real protocols (import as `fakes`; the root conftest puts tests/ on sys.path)."""
