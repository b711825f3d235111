"""Find earlier diary entries about something, optionally within a range of dates."""


async def run(input, ctx):
    options = {"collections": ["diary"], "limit": input.get("limit", 5)}
    if input.get("from") or input.get("to"):
        options["timeRange"] = {k: input[k] for k in ("from", "to") if input.get(k)}
    hits = await ctx.knowledge.search(input.get("query", ""), options)
    return [{"date": hit.meta.get("date"), "text": hit.text} for hit in hits]
