"""List the colleagues of the person with this email."""


async def run(input, ctx):
    person = await ctx.knowledge.entities.resolve({"email": input["email"]})
    if person is None:
        return {"error": f"I do not know {input['email']}"}
    facts = await ctx.knowledge.facts.lookup(person.ref, "relation.colleague")
    names = []
    for fact in facts:
        if fact.object:
            names.append((await ctx.knowledge.entities.get(fact.object)).displayName)
    return {"person": person.displayName, "colleagues": names}
