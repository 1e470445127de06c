// The workspace root (#/): the scorecards; with ?conversation= (where a
// notification about an agent's conversation leads, spec §6) the
// approvals of that conversation.
export async function render(main, ctx) {
  const mod = ctx.query.get('conversation') ? await import('./approvals.js') : await import('./scorecards.js');
  return mod.render(main, ctx);
}
