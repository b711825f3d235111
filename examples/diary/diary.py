"""Append a note to today's diary entry (one entry a day, keyed by its date)."""

from datetime import date


async def run(input, ctx):
    day = input.get("date") or date.today().isoformat()
    note = input["note"].strip()
    existing = await ctx.knowledge.documents.get_by_key("diary", day)
    body = f"{existing.body}\n\n{note}" if existing and existing.body else note
    result = await ctx.knowledge.documents.upsert(
        {"collection": "diary", "key": day, "title": day, "body": body, "meta": {"date": day}}
    )
    return {"date": day, "status": result.status}
