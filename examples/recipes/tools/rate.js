// Permissions: facts.read:self:pref.food.*, facts.write:self:pref.food.*, collections.create
export default async function (input, ctx) {
const cols = await ctx.knowledge.collections.list()
const col = cols.find((c) => c.name === 'Recipes') ?? (await ctx.knowledge.collections.create('Recipes'))
const fact = await ctx.knowledge.facts.put({ predicateHint: 'pref.food.rated', value: input.dish, sourceRef: `record/${input.id}` })
const doc = await ctx.knowledge.documents.upsert({ collection: col.ref, key: input.id, title: input.dish, body: input.recipe })
return { fact: fact.status, doc: doc.status }
}
