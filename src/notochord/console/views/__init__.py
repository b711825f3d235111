"""What each console page shows, as plain data (OD-K52): built from a space, rendered by templates."""
