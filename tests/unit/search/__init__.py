"""Unit tests of notochord.search."""
