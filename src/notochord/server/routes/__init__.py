"""The routers of the knowledge-base service, mounted under ``/api/knowledge``."""
