"""Resolve two people by email (adding them if new) and record that they are colleagues."""


async def run(input, ctx):
    people = []
    for person in input["people"]:
        found = await ctx.knowledge.entities.resolve(
            {"email": person["email"], "name": person.get("name", person["email"])}, {"create": True}
        )
        people.append(found)
        if person.get("company"):
            await ctx.knowledge.facts.put(
                {"subject": found.ref, "predicateHint": "work.company", "value": person["company"]}
            )
    first, second = people[0], people[1]
    relation = await ctx.knowledge.facts.put(
        {"subject": first.ref, "predicateHint": "relation.colleague", "object": second.ref}
    )
    return {"people": [p.displayName for p in people], "relation": relation.status}
