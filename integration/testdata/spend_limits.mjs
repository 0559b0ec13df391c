// Drives the gateway's Spend Limits API with the official Anthropic Node
// SDK, unmodified, and an admin key: set (upsert), list (the SDK sends the
// beta header and follows next_page), retrieve, the effective report,
// increase requests listed, retrieved, approved and denied, delete, and
// the SDK's own error classes for a refusal. MODELGATE_REQUESTS names two
// pending requests (comma-separated). Prints one JSON object.
import Anthropic from '@anthropic-ai/sdk';

const client = new Anthropic({ baseURL: process.env.MODELGATE_BASE, apiKey: process.env.MODELGATE_API_KEY, maxRetries: 0 });
const sl = client.beta.organization.spendLimits;
const out = {};

const org = await sl.set({ amount: '100000', scope: { type: 'organization' } });
const group = await sl.set({ amount: '3000', scope: { type: 'rbac_group', rbac_group_id: 'eng' }, period: 'weekly' });
const again = await sl.set({ amount: '4000', scope: { type: 'rbac_group', rbac_group_id: 'eng' }, period: 'weekly' });
out.upsertKeptID = again.id === group.id && again.amount === '4000';
const exempt = await sl.set({ amount: null, scope: { type: 'user', user_id: 'vip@example.com' } });
out.nullAmount = exempt.amount;
out.retrieved = (await sl.retrieve(org.id)).scope.type;

const listed = [];
for await (const l of sl.list({ limit: 1 })) listed.push(l.scope.type);
out.listed = listed;
const users = [];
for await (const l of sl.list({ scope_type: ['user'] })) users.push(l.scope.user_id);
out.users = users;

const effective = [];
for await (const row of sl.effective.list({ period: ['weekly'] })) {
  effective.push({ user: row.actor.user_id, amount: row.amount, source: row.source.type, spend: row.period_to_date_spend });
}
out.effective = effective;

const [approveID, denyID] = (process.env.MODELGATE_REQUESTS || '').split(',');
const pending = [];
for await (const r of sl.increaseRequests.list({ status: ['pending'] })) pending.push(r.id);
out.pending = pending.sort();
const approved = await sl.increaseRequests.approve(approveID, { amount: '9000' });
out.approved = { status: approved.status, amount: approved.spend_limit?.amount, scope: approved.spend_limit?.scope, summary: approved.spend_summary?.amount };
const denied = await sl.increaseRequests.deny(denyID, {});
out.denied = denied.status;
out.retrievedRequest = (await sl.increaseRequests.retrieve(approveID)).status;
try {
  await sl.increaseRequests.deny(approveID, {});
  out.denyApproved = 'no error';
} catch (e) {
  out.denyApproved = `${e.constructor.name} ${e.status} ${e.error?.error?.type}`;
}
try {
  await sl.retrieve('spl_missing');
} catch (e) {
  out.missing = `${e.constructor.name} ${e.status}`;
}
try {
  await sl.set({ amount: '12.50', scope: { type: 'organization' } });
} catch (e) {
  out.badAmount = `${e.constructor.name} ${e.status} ${e.error?.error?.message}`;
}
out.deleted = (await sl.delete(org.id)).type;
console.log(JSON.stringify(out));
