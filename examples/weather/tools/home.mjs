// Permission: facts.read:self:location.home.*
export default async function (input, ctx) {
const [home] = await ctx.knowledge.profile.get('location.home')
if (!home) return { error: 'I do not know where you live' }
return { city: home.value }
}
