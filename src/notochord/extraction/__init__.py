"""Text extraction from documents (HTML, PDF, DOCX, Markdown, plain text): a leaf package.

It knows no store, no network and no permission, so every caller uses the same code: ``ctx.extract``
(:mod:`notochord.gems.api.extract`), the REST service (the extractor ``server/app.py`` injects) and
``notochord docs import``. :mod:`notochord.extraction.text` is the entry point.
"""
