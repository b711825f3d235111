"""The console's routes, one module per page area."""
