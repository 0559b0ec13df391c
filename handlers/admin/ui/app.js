// Modelgate dashboard: plain JavaScript over the gateway's own API (the
// same endpoints a script calls), charts drawn as SVG. The key lives in
// this tab's sessionStorage and goes out as x-api-key; a person signed
// in with the identity provider has an HttpOnly session cookie instead,
// and their state-changing calls carry the session's X-CSRF-Token.
'use strict';

const $ = (sel) => document.querySelector(sel);
const view = $('#view');
const status = $('#status');
const colors = ['#2f5fd0', '#e07b39', '#2e9e6a', '#a44bd1', '#c9a227', '#d0453f', '#4bb3c9', '#7a7f8c'];
let me = null;

function key() { return sessionStorage.getItem('mg-key') || ''; }

async function api(path, opts = {}) {
  const headers = { 'anthropic-version': '2023-06-01' };
  if (key()) headers['x-api-key'] = key();
  else if (me && me.csrf_token && (opts.method || 'GET') !== 'GET') headers['x-csrf-token'] = me.csrf_token;
  if (opts.body) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method: opts.method || 'GET', headers, body: opts.body ? JSON.stringify(opts.body) : undefined });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!res.ok) {
    const msg = (data && data.error && data.error.message) || ('HTTP ' + res.status);
    const err = new Error(msg);
    err.status = res.status;
    throw err;
  }
  return data;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    // Styles go through the CSSOM: the page's CSP refuses style attributes.
    else if (k === 'style') Object.assign(e.style, v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function svgEl(tag, attrs = {}) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// Amounts come as cents in decimal strings (the cost report's way).
function dollars(cents) { return '$' + (Number(cents) / 100).toFixed(2); }
function num(n) { return Number(n).toLocaleString('en-US'); }
function share(f) { return (Math.round(f * 1000) / 10).toFixed(1) + '%'; }
function say(msg, bad) { status.textContent = msg || ''; status.className = bad ? 'error' : ''; }

// Keys and workspaces by name: reports carry ids (apikey_…, wrkspc_…),
// people know names (bob-laptop, oidc: bob@…, platform). Read once per
// view for whoever may list them; anyone else sees ids.
let names = { keys: {}, workspaces: {} };
async function loadNames() {
  names = { keys: {}, workspaces: {} };
  if (!me || (me.role !== 'admin' && me.role !== 'auditor')) return;
  try {
    const [k, w] = await Promise.all([api('/v1/organizations/api_keys?limit=1000'), api('/v1/organizations/workspaces?limit=1000')]);
    k.data.forEach((x) => { names.keys[x.id] = x.name; });
    w.data.forEach((x) => { names.workspaces[x.id] = x.name; });
  } catch (e) { /* names are a convenience: ids still identify */ }
}
// named shows what id names, with the id itself on hover.
function named(kind, id) {
  const n = id && names[kind][id];
  return n && n !== id ? el('span', { title: id }, n) : (id || '-');
}

function monthStart() {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString().replace('.000', '');
}
function daysAgo(n) {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - n + 1)).toISOString().replace('.000', '');
}

function table(headers, rows, numeric = []) {
  if (!rows.length) return el('p', { class: 'empty' }, 'Nothing in this range yet.');
  return el('div', { class: 'scroll' }, el('table', {},
    el('thead', {}, el('tr', {}, headers.map((h, i) => el('th', { scope: 'col', class: numeric.includes(i) ? 'num' : null }, h)))),
    el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c, i) => el('td', { class: numeric.includes(i) ? 'num' : null }, c)))))));
}

// stacked draws one bar per day, stacked by series; series[name][day] = value.
function stacked(title, days, series, fmt) {
  const names = Object.keys(series);
  if (!names.length) return el('p', { class: 'empty' }, title + ': nothing in this range yet.');
  const W = 720, H = 220, pad = 34, bw = Math.max(2, (W - pad * 2) / days.length - 2);
  const totals = days.map((_, i) => names.reduce((s, n) => s + (series[n][i] || 0), 0));
  const max = Math.max(...totals, 1);
  const svg = svgEl('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
  svg.append(svgEl('line', { x1: pad, y1: H - pad, x2: W - pad / 2, y2: H - pad, stroke: '#d8dce4' }));
  const top = svgEl('text', { x: 4, y: 14, 'font-size': 11, fill: '#5d6678' });
  top.textContent = fmt(max);
  svg.append(top);
  days.forEach((d, i) => {
    let y = H - pad;
    const x = pad + i * (bw + 2);
    names.forEach((n, k) => {
      const v = series[n][i] || 0;
      if (!v) return;
      const h = (v / max) * (H - pad * 1.5);
      y -= h;
      const r = svgEl('rect', { x, y, width: bw, height: h, fill: colors[k % colors.length] });
      const t = svgEl('title', {});
      t.textContent = `${d.slice(0, 10)} ${n}: ${fmt(v)}`;
      r.append(t);
      svg.append(r);
    });
    if (i % Math.ceil(days.length / 8) === 0) {
      const lab = svgEl('text', { x, y: H - pad + 14, 'font-size': 10, fill: '#5d6678' });
      lab.textContent = d.slice(5, 10);
      svg.append(lab);
    }
  });
  const legend = el('div', { class: 'legend' }, names.map((n, k) => el('span', {}, el('i', { style: { background: colors[k % colors.length] } }), n)));
  return el('figure', {}, el('figcaption', {}, el('h2', {}, title)), svg, legend);
}

// Views ---------------------------------------------------------------

// askForMore asks the person's approvers for a higher limit of their own
// (docs/spend-limits-api.md).
async function askForMore(b) {
  const amount = window.prompt(`New ${b.period} limit in dollars (now ${dollars(b.amount)})`);
  if (!amount) return;
  const cents = Math.round(Number(amount) * 100);
  if (!(cents > 0)) { say('Give the limit in dollars, e.g. 50', true); return; }
  const reason = window.prompt('Why (your approvers read this)?') || '';
  try {
    await api('/v1/organizations/spend_limit_increase_requests', { method: 'POST', body: { amount: String(cents), period: b.period, reason } });
    say(`Asked for a ${b.period} limit of ${dollars(cents)}; your approvers were told.`);
  } catch (e) { say(e.message, true); }
}

// increaseRequests lists the pending increase requests the caller may see:
// approvers (admins, group leads) get buttons, a person their own.
async function increaseRequests() {
  const pending = await api('/v1/organizations/spend_limit_increase_requests?status[]=pending').catch(() => ({ data: [] }));
  if (!pending.data.length) return el('div', { id: 'increase-requests' });
  const resolve = async (r, action) => {
    try {
      const body = action === 'approve' ? { amount: r.requested_amount } : {};
      await api(`/v1/organizations/spend_limit_increase_requests/${encodeURIComponent(r.id)}/${action}`, { method: 'POST', body });
      say(`${r.actor.user_id}'s request ${action === 'approve' ? 'approved' : 'denied'}.`);
      show();
    } catch (e) { say(e.message, true); }
  };
  return el('div', { id: 'increase-requests' }, el('h2', {}, 'Spend limit requests'), table(['Person', 'Period', 'Asked', 'Now', 'Spent', 'Reason', ''],
    pending.data.map((r) => [r.actor.user_id, r.period, dollars(r.requested_amount),
      r.spend_summary && r.spend_summary.amount ? dollars(r.spend_summary.amount) : '-',
      r.spend_summary ? dollars(r.spend_summary.period_to_date_spend) : '-', r.reason,
      r.actor.user_id === me.id ? 'waiting' : el('span', {},
        el('button', { type: 'button', class: 'plain', 'data-approve': r.id, onclick: () => resolve(r, 'approve') }, 'Approve'), ' ',
        el('button', { type: 'button', class: 'plain', 'data-deny': r.id, onclick: () => resolve(r, 'deny') }, 'Deny'))]), [2, 3, 4]));
}

async function overview() {
  const since = monthStart();
  const parts = [el('h2', {}, 'This month (UTC)')];
  const budgets = (me.budgets || []).map((b) => {
    // A budget of $0 admits no paid use: it is full from the start.
    const pct = Number(b.amount) === 0 ? 100 : Math.min(100, (Number(b.spent) / Number(b.amount)) * 100 || 0);
    const from = b.source && b.source.scope === 'rbac_group' ? ` (group ${b.source.id})` : '';
    return el('div', { class: 'card' },
      el('div', {}, b.scope === 'user' ? `your limit${from}, ${b.period}` : `${b.scope.replace('_', ' ')} ${b.source ? 'limit' : 'budget'}, ${b.period}`),
      el('div', { class: 'big' }, `${dollars(b.spent)} of ${dollars(b.amount)}`),
      el('div', { class: 'bar' + (pct >= 100 ? ' over' : ''), role: 'progressbar', 'aria-valuenow': Math.round(pct), 'aria-valuemin': 0, 'aria-valuemax': 100 },
        el('span', { style: { width: pct + '%' } })),
      b.remaining !== undefined ? el('small', {}, `${dollars(b.remaining)} left`) : null, ' ',
      b.resets_at ? el('small', {}, 'resets ' + b.resets_at.replace('T', ' ').replace('Z', ' UTC')) : null,
      b.scope === 'user' ? el('button', { type: 'button', class: 'plain', 'data-ask': b.period, onclick: () => askForMore(b) }, 'Ask for more') : null);
  });
  const cost = await api(`/v1/organizations/cost_report?starting_at=${since}&group_by[]=description&limit=31`);
  const days = cost.data.map((b) => b.starting_at);
  const byModel = {};
  let total = 0;
  cost.data.forEach((b, i) => b.results.forEach((r) => {
    const m = r.model || 'other';
    (byModel[m] = byModel[m] || [])[i] = (byModel[m][i] || 0) + Number(r.amount);
    total += Number(r.amount);
  }));
  parts.push(el('div', { class: 'cards' },
    el('div', { class: 'card' }, el('div', {}, me.type === 'api_key' && me.role !== 'admin' ? 'Your spend' : 'Spend'), el('div', { class: 'big', id: 'total-spend' }, dollars(total))),
    budgets));
  parts.push(await increaseRequests());
  parts.push(stacked('Spend per day by model', days, byModel, (v) => dollars(v)));
  const usage = await api(`/v1/organizations/usage_report/messages?starting_at=${since}&limit=31`);
  const tokens = { 'uncached input': [], 'cache read': [], 'cache write': [], output: [] };
  usage.data.forEach((b, i) => b.results.forEach((r) => {
    tokens['uncached input'][i] = (tokens['uncached input'][i] || 0) + r.uncached_input_tokens;
    tokens['cache read'][i] = (tokens['cache read'][i] || 0) + r.cache_read_input_tokens;
    tokens['cache write'][i] = (tokens['cache write'][i] || 0) + r.cache_creation.ephemeral_5m_input_tokens + r.cache_creation.ephemeral_1h_input_tokens;
    tokens.output[i] = (tokens.output[i] || 0) + r.output_tokens;
  }));
  for (const k of Object.keys(tokens)) if (!tokens[k].some(Boolean)) delete tokens[k];
  parts.push(stacked('Tokens per day by type', usage.data.map((b) => b.starting_at), tokens, num));
  // Every model used, free local ones included: the spend chart cannot
  // show a model whose cost is $0, so tokens stand beside cost here.
  // Each alias names the upstream models that answered it (upstream_model,
  // the gateway's extension): an alias a fallback answered at $0 reads
  // "claude → echo", not as a free Claude. A proxied report lacks the
  // dimension, so the plain one stands in.
  const perModelURL = `/v1/organizations/usage_report/messages?starting_at=${since}&group_by[]=model&limit=31`;
  const perModel = await api(perModelURL + '&group_by[]=upstream_model').catch(() => api(perModelURL));
  const models = {};
  const upstreams = {};
  perModel.data.forEach((b) => b.results.forEach((r) => {
    const m = models[r.model || 'other'] = models[r.model || 'other'] || { requests: 0, input: 0, output: 0 };
    if (r.upstream_model && r.upstream_model !== r.model) (upstreams[r.model || 'other'] = upstreams[r.model || 'other'] || new Set()).add(r.upstream_model);
    m.requests += r.requests || 0;
    m.input += r.uncached_input_tokens + r.cache_read_input_tokens + r.cache_creation.ephemeral_5m_input_tokens + r.cache_creation.ephemeral_1h_input_tokens;
    m.output += r.output_tokens;
  }));
  for (const m of Object.keys(byModel)) models[m] = models[m] || { requests: 0, input: 0, output: 0 };
  const modelCost = (m) => (byModel[m] || []).reduce((s, v) => s + (v || 0), 0);
  parts.push(el('h2', {}, 'Models used'), el('div', { id: 'by-model' }, table(['Model', 'Requests', 'Input tokens', 'Output tokens', 'Spend'],
    Object.keys(models).sort((a, b) => modelCost(b) - modelCost(a) || (models[b].input + models[b].output) - (models[a].input + models[a].output))
      .map((m) => [upstreams[m] ? m + ' → ' + [...upstreams[m]].sort().join(', ') : m, num(models[m].requests), num(models[m].input), num(models[m].output), dollars(modelCost(m))]), [1, 2, 3, 4])));
  if (me.role === 'admin') parts.push(await keyBudgets());
  const byKey = await api(`/v1/organizations/cost_report?starting_at=${since}&group_by[]=api_key_id&limit=31`);
  const keySpend = {};
  byKey.data.forEach((b) => b.results.forEach((r) => { keySpend[r.api_key_id] = (keySpend[r.api_key_id] || 0) + Number(r.amount); }));
  // Each key's cache-read share: cache reads over all its input tokens.
  // Near 0 with cache writes is a prompt cache written and never read.
  const keyTokens = await api(`/v1/organizations/usage_report/messages?starting_at=${since}&group_by[]=api_key_id&limit=31`);
  const keyCache = {};
  keyTokens.data.forEach((b) => b.results.forEach((r) => {
    const c = keyCache[r.api_key_id] = keyCache[r.api_key_id] || { read: 0, input: 0 };
    c.read += r.cache_read_input_tokens;
    c.input += r.uncached_input_tokens + r.cache_read_input_tokens + r.cache_creation.ephemeral_5m_input_tokens + r.cache_creation.ephemeral_1h_input_tokens;
    keySpend[r.api_key_id] = keySpend[r.api_key_id] || 0;
  }));
  const keyShare = (k) => (keyCache[k] && keyCache[k].input ? share(keyCache[k].read / keyCache[k].input) : '-');
  parts.push(el('h2', {}, 'Top keys'), el('div', { id: 'top-keys' }, table(['Key', 'Spend', 'Cache read share'],
    Object.entries(keySpend).sort((a, b) => b[1] - a[1]).slice(0, 10).map(([k, v]) => [named('keys', k), dollars(v), keyShare(k)]), [1, 2])));
  const sessions = await api(`/v1/organizations/sessions?starting_at=${since}&limit=10`);
  parts.push(el('h2', {}, 'Top sessions'), sessionTable(sessions.data));
  view.replaceChildren(...parts);
}

// periodStart is where a budget period began, in UTC.
function periodStart(period) {
  const d = new Date();
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (period === 'daily') return new Date(day);
  if (period === 'weekly') return new Date(day - ((d.getUTCDay() + 6) % 7) * 86400000);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}

// keyBudgets is, for an admin, every key's budget against its spend in
// the budget's current period (total budgets: the last 31 days shown).
async function keyBudgets() {
  const list = await api('/v1/organizations/api_keys?limit=1000');
  const withBudget = list.data.filter((k) => k.budget);
  if (!withBudget.length) return el('p', { class: 'empty' }, 'No key has a budget.');
  const spent = {};
  for (const period of [...new Set(withBudget.map((k) => k.budget.period))]) {
    const start = period === 'total' ? new Date(Date.now() - 30 * 86400000) : periodStart(period);
    const iso = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate())).toISOString().replace('.000', '');
    const rep = await api(`/v1/organizations/cost_report?starting_at=${iso}&group_by[]=api_key_id&limit=31`);
    spent[period] = {};
    rep.data.forEach((b) => b.results.forEach((r) => { spent[period][r.api_key_id] = (spent[period][r.api_key_id] || 0) + Number(r.amount); }));
  }
  return el('div', {}, el('h2', {}, 'Budgets'), table(['Key', 'Budget', 'Spent this period', 'Used'],
    withBudget.map((k) => {
      const s = spent[k.budget.period][k.id] || 0;
      const pct = Number(k.budget.amount) === 0 ? 100 : Math.round((s / Number(k.budget.amount)) * 100);
      return [k.name + ' (' + k.id + ')', `${dollars(k.budget.amount)} ${k.budget.period}`, dollars(s), pct + '%'];
    }), [2, 3]));
}

function sessionTable(rows) {
  return table(['Session', 'Agent', 'Key', 'Requests', 'Output tokens', 'Cache read share', 'Cost', 'Last request'],
    rows.map((s) => [s.id, s.agent || '-', named('keys', s.api_key_id), num(s.requests), num(s.tokens.output),
      s.tokens.uncached_input + s.tokens.cache_creation + s.tokens.cache_read ? share(s.cache_read_share) : '-',
      dollars(s.cost.amount), s.last_request_at.replace('T', ' ').replace('Z', '')]),
    [3, 4, 5, 6]);
}

async function sessions() {
  const data = await api(`/v1/organizations/sessions?starting_at=${daysAgo(30)}&limit=100`);
  view.replaceChildren(el('h2', {}, 'Sessions, last 30 days, by cost'), sessionTable(data.data), ...(await loopBreaker(data.data)));
}

// loopBreaker lists the sessions the loop breaker holds, each with a
// Resume button, and its trips per person and week.
async function loopBreaker(rows) {
  const held = rows.filter((s) => s.breaker && s.breaker.state !== 'watching');
  const resume = (s) => el('button', { type: 'button', onclick: async () => {
    try {
      await api(`/v1/organizations/sessions/${encodeURIComponent(s.id)}/resume?api_key_id=${encodeURIComponent(s.api_key_id)}`, { method: 'POST' });
      say(`Session ${s.id} resumed.`);
      await sessions();
    } catch (e) { say(e.message, true); }
  } }, 'Resume');
  const out = [el('h2', {}, 'Held by the loop breaker'), held.length
    ? table(['Session', 'Agent', 'Key', 'State', 'Pattern', 'Cost', ''], held.map((s) => [s.id, s.agent || '-', named('keys', s.api_key_id),
      s.breaker.state, s.breaker.last_pattern || '-', dollars(s.cost.amount), resume(s)]), [5])
    : el('p', { class: 'empty' }, 'No session is paused or stopped.')];
  try {
    const rep = await api('/v1/organizations/breaker_report');
    out.push(el('h2', {}, 'Loop breaker trips by person and week'), table(['Week', 'Person or key', 'Trips', 'Patterns', 'Spent before', 'Spent after', 'Loop estimate (1 h)'],
      rep.data.map((w) => [w.week_start, w.person || named('keys', w.api_key_id), num(w.trips), Object.entries(w.patterns).map(([p, n]) => `${p} ${n}`).join(', '),
        dollars(w.spent_before.amount), dollars(w.spent_after.amount), dollars(w.loop_estimate.amount)]), [2, 4, 5, 6]));
  } catch (e) { out.push(el('p', { class: 'empty' }, 'Loop breaker trips: ' + e.message)); }
  return out;
}

async function deployments() {
  const h = await api('/health');
  view.replaceChildren(el('h2', {}, 'Deployments'), table(['Alias', 'Provider / model', 'State', 'In flight', 'Recent failures', 'Time to first token'],
    h.deployments.map((d) => [d.model_name, `${d.provider}/${d.model}`, d.healthy ? 'healthy' : 'cooling down until ' + d.cooling_down_until,
      d.in_flight, d.recent_failures, d.recent_ttft_ms ? d.recent_ttft_ms.toFixed(0) + ' ms' : '-']), [3, 4]));
}

async function keys() {
  const list = await api('/v1/organizations/api_keys?limit=1000');
  const out = el('div', { id: 'secret-box' });
  const form = el('form', { class: 'inline', id: 'create-key' },
    el('div', {}, el('label', { for: 'k-name' }, 'Name'), el('input', { id: 'k-name', required: true })),
    el('div', {}, el('label', { for: 'k-models' }, 'Models (comma-separated, empty: all)'), el('input', { id: 'k-models' })),
    el('div', {}, el('label', { for: 'k-budget' }, 'Budget, USD'), el('input', { id: 'k-budget', type: 'number', min: 0, step: '0.01' })),
    el('div', {}, el('label', { for: 'k-period' }, 'Period'), el('select', { id: 'k-period' }, ['monthly', 'weekly', 'daily', 'total'].map((p) => el('option', {}, p)))),
    el('div', {}, el('label', { for: 'k-rpm' }, 'Requests per minute'), el('input', { id: 'k-rpm', type: 'number', min: 0 })),
    el('button', { type: 'submit' }, 'Create key'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { name: $('#k-name').value };
    const models = $('#k-models').value.split(',').map((s) => s.trim()).filter(Boolean);
    if (models.length) body.models = models;
    if ($('#k-rpm').value) body.rpm = Number($('#k-rpm').value);
    try {
      if ($('#k-budget').value) body.budget = { amount: centsOf($('#k-budget').value), period: $('#k-period').value };
      const k = await api('/v1/organizations/api_keys', { method: 'POST', body });
      await keys();
      $('#secret-box').replaceChildren(el('p', {}, `Key ${k.id} created. Copy its secret now: it is not shown again.`), el('p', { class: 'secret', id: 'new-secret' }, k.value));
    } catch (e) { say(e.message, true); }
  });
  const editor = el('div', { id: 'edit-box' });
  // Per-person keys are minted again at every renewal, so expired ones
  // pile up: the list shows the usable keys unless asked for others.
  const shown = list.data.filter((k) => keyFilter === 'all' || keyState(k) === keyFilter);
  const rows = shown.map((k) => [k.id, k.name, named('workspaces', k.workspace_id), keyState(k), (k.models || []).join(', ') || 'all',
    k.budget ? `${dollars(k.budget.amount)} ${k.budget.period}` : '-', k.rpm || '-',
    k.created_by.type === 'config' ? 'Caddyfile' : (k.status === 'active'
      ? el('span', { class: 'actions' },
        el('button', { type: 'button', class: 'plain', 'data-edit': k.id, onclick: () => editLimits('key', k, editor, keys) }, 'Edit limits'), ' ',
        el('button', { type: 'button', class: 'plain', 'data-revoke': k.id, onclick: () => revoke(k.id) }, 'Revoke'))
      : '-')]);
  const filter = el('select', { id: 'k-filter', onchange: (ev) => { keyFilter = ev.target.value; keys().catch((e) => say(e.message, true)); } },
    ['active', 'expired', 'inactive', 'archived', 'all'].map((f) => el('option', { value: f, selected: f === keyFilter }, f)));
  const count = {};
  list.data.forEach((k) => { count[keyState(k)] = (count[keyState(k)] || 0) + 1; });
  view.replaceChildren(el('h2', {}, 'Keys'), form, out, editor,
    el('div', { class: 'filters' }, el('label', { for: 'k-filter' }, 'Show'), filter,
      el('span', { id: 'k-count' }, ` ${shown.length} of ${list.data.length} keys (` +
        ['active', 'expired', 'inactive', 'archived'].map((s) => `${count[s] || 0} ${s}`).join(', ') + ')')),
    table(['ID', 'Name', 'Workspace', 'Status', 'Models', 'Budget', 'RPM', ''], rows));
}

// keyFilter is the keys list's status filter, kept while the view redraws.
let keyFilter = 'active';
// keyState is a key's status as a person reads it: an active key past its
// expires_at no longer works, so it is expired.
function keyState(k) {
  return k.status === 'active' && k.expires_at && Date.parse(k.expires_at) <= Date.now() ? 'expired' : k.status;
}

// editLimits opens a form for every limit a key or workspace carries; the same
// fields the admin API takes, so nothing is only settable from a script.
// centsOf turns dollars as typed ("2.5", "10.05") into the API's cents
// string exactly, as the CLI and the Caddyfile read them: a float product
// would turn 2.505 into 251 cents, and a fraction of a cent is refused,
// not rounded.
function centsOf(text) {
  const m = /^\s*(\d+)(?:\.(\d{0,2}))?\s*$/.exec(text);
  if (!m) throw new Error(`"${text}" is not an amount in dollars with at most two decimals`);
  return String(Number(m[1]) * 100 + Number((m[2] || '').padEnd(2, '0')));
}

function editLimits(kind, obj, box, reload) {
  const cents = (v) => (v == null ? '' : (Number(v) / 100).toFixed(2));
  const field = (id, label, attrs) => el('div', {}, el('label', { for: id }, label), el('input', Object.assign({ id }, attrs)));
  const form = el('form', { class: 'inline', id: 'edit-limits' },
    el('strong', {}, `Limits of ${obj.name}`),
    kind === 'key' ? field('e-models', 'Models (empty: all)', { value: (obj.models || []).join(', ') }) : '',
    field('e-budget', 'Budget, USD (empty: none; 0: no paid use)', { type: 'number', min: 0, step: '0.01', value: obj.budget ? cents(obj.budget.amount) : '' }),
    el('div', {}, el('label', { for: 'e-period' }, 'Period'),
      el('select', { id: 'e-period' }, ['monthly', 'weekly', 'daily', 'total'].map((p) => el('option', { selected: obj.budget && obj.budget.period === p }, p)))),
    field('e-soft', 'Soft budget, USD', { type: 'number', min: 0, step: '0.01', value: cents(obj.soft_budget) }),
    field('e-session', 'Per-session cap, USD', { type: 'number', min: 0, step: '0.01', value: cents(obj.session_budget) }),
    field('e-rpm', 'Requests per minute', { type: 'number', min: 0, value: obj.rpm || '' }),
    field('e-tpm', 'Tokens per minute', { type: 'number', min: 0, value: obj.tpm || '' }),
    field('e-parallel', 'Max parallel', { type: 'number', min: 0, value: obj.max_parallel || '' }),
    el('button', { type: 'submit' }, 'Save'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const money = (id) => ($(id).value === '' ? null : centsOf($(id).value));
    const count = (id) => ($(id).value === '' ? null : Number($(id).value));
    let b, soft, session;
    try {
      b = money('#e-budget'); soft = money('#e-soft'); session = money('#e-session');
    } catch (e) { say(e.message, true); return; }
    // Only what this form changed is sent: an update changes only the
    // fields it names, so an edit made meanwhile elsewhere (the CLI,
    // another tab) to another limit is kept.
    const was = (v) => (v == null ? null : String(v));
    const body = {};
    const oldBudget = obj.budget ? `${obj.budget.amount} ${obj.budget.period}` : null;
    if ((b === null ? null : `${b} ${$('#e-period').value}`) !== oldBudget) body.budget = b === null ? null : { amount: b, period: $('#e-period').value };
    if (soft !== was(obj.soft_budget)) body.soft_budget = soft;
    if (session !== was(obj.session_budget)) body.session_budget = session;
    for (const [k, id] of [['rpm', '#e-rpm'], ['tpm', '#e-tpm'], ['max_parallel', '#e-parallel']]) {
      if (count(id) !== (obj[k] || null)) body[k] = count(id);
    }
    if (kind === 'key') {
      const models = $('#e-models').value.split(',').map((x) => x.trim()).filter(Boolean);
      if (models.join(',') !== (obj.models || []).join(',')) body.models = models;
    }
    const path = kind === 'key' ? 'api_keys' : 'workspaces';
    try {
      await api(`/v1/organizations/${path}/${encodeURIComponent(obj.id)}`, { method: 'POST', body });
      await reload();
      say(`Limits of ${obj.name} saved.`);
    } catch (e) { say(e.message, true); }
  });
  box.replaceChildren(form);
  form.querySelector('input').focus();
}

async function workspaces() {
  const list = await api('/v1/organizations/workspaces?limit=1000');
  const form = el('form', { class: 'inline', id: 'create-workspace' },
    el('div', {}, el('label', { for: 'w-name' }, 'Name'), el('input', { id: 'w-name', required: true })),
    el('div', {}, el('label', { for: 'w-budget' }, 'Budget, USD'), el('input', { id: 'w-budget', type: 'number', min: 0, step: '0.01' })),
    el('div', {}, el('label', { for: 'w-period' }, 'Period'), el('select', { id: 'w-period' }, ['monthly', 'weekly', 'daily', 'total'].map((p) => el('option', {}, p)))),
    el('button', { type: 'submit' }, 'Create workspace'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { name: $('#w-name').value };
    try {
      if ($('#w-budget').value) body.budget = { amount: centsOf($('#w-budget').value), period: $('#w-period').value };
      await api('/v1/organizations/workspaces', { method: 'POST', body });
      await workspaces();
    } catch (e) { say(e.message, true); }
  });
  const editor = el('div', { id: 'edit-box' });
  view.replaceChildren(el('h2', {}, 'Workspaces'), form, editor, table(['ID', 'Name', 'Budget', 'RPM', 'TPM', 'Max parallel', ''],
    list.data.map((w) => [w.id, w.name, w.budget ? `${dollars(w.budget.amount)} ${w.budget.period}` : '-', w.rpm || '-', w.tpm || '-', w.max_parallel || '-',
      w.created_by.type === 'config' ? 'Caddyfile' : el('span', {},
        el('button', { type: 'button', class: 'plain', 'data-edit': w.id, onclick: () => editLimits('workspace', w, editor, workspaces) }, 'Edit limits'), ' ',
        el('button', { type: 'button', class: 'plain', 'data-archive': w.id, onclick: async () => {
          try { await api(`/v1/organizations/workspaces/${encodeURIComponent(w.id)}/archive`, { method: 'POST' }); await workspaces(); } catch (e) { say(e.message, true); }
        } }, 'Archive'))])));
}

async function revoke(id) {
  try {
    await api(`/v1/organizations/api_keys/${encodeURIComponent(id)}`, { method: 'POST', body: { status: 'archived' } });
    say(`Key ${id} revoked.`);
    await keys();
  } catch (e) { say(e.message, true); }
}

async function explorer() {
  const form = el('form', { class: 'inline', id: 'explore' },
    el('div', {}, el('label', { for: 'x-group' }, 'Group by'), el('select', { id: 'x-group' }, ['model', 'api_key_id', 'workspace_id'].map((g) => el('option', {}, g)))),
    el('div', {}, el('label', { for: 'x-days' }, 'Days'), el('input', { id: 'x-days', type: 'number', min: 1, max: 31, value: 7 })),
    el('div', {}, el('label', { for: 'x-models' }, 'Models (comma-separated)'), el('input', { id: 'x-models' })),
    el('div', {}, el('label', { for: 'x-keys' }, 'Keys'), el('input', { id: 'x-keys' })),
    el('div', {}, el('label', { for: 'x-workspaces' }, 'Workspaces'), el('input', { id: 'x-workspaces' })),
    el('button', { type: 'submit' }, 'Show'),
    el('button', { type: 'button', class: 'plain', id: 'csv' }, 'Export CSV'));
  const out = el('div', { id: 'explore-out' });
  let rows = [];
  const load = async () => {
    const g = $('#x-group').value, d = Number($('#x-days').value) || 7;
    let filters = '';
    for (const [field, param] of [['#x-models', 'models[]'], ['#x-keys', 'api_key_ids[]'], ['#x-workspaces', 'workspace_ids[]']]) {
      for (const v of $(field).value.split(',').map((x) => x.trim()).filter(Boolean)) filters += `&${param}=${encodeURIComponent(v)}`;
    }
    const u = await api(`/v1/organizations/usage_report/messages?starting_at=${daysAgo(d)}&group_by[]=${g}&limit=31${filters}`);
    rows = [];
    u.data.forEach((b) => b.results.forEach((r) => rows.push([b.starting_at.slice(0, 10), r[g] || '-', r.uncached_input_tokens,
      r.cache_read_input_tokens, r.cache_creation.ephemeral_5m_input_tokens + r.cache_creation.ephemeral_1h_input_tokens, r.output_tokens])));
    const kind = { api_key_id: 'keys', workspace_id: 'workspaces' }[g];
    out.replaceChildren(table(['Day', g, 'Uncached input', 'Cache read', 'Cache write', 'Output'],
      rows.map((r) => r.map((c, i) => (i > 1 ? num(c) : (i === 1 && kind ? named(kind, c) : c)))), [2, 3, 4, 5]));
  };
  form.addEventListener('submit', (ev) => { ev.preventDefault(); load().catch((e) => say(e.message, true)); });
  view.replaceChildren(el('h2', {}, 'Usage explorer'), form, out);
  $('#csv').addEventListener('click', () => {
    const lines = [['day', $('#x-group').value, 'uncached_input', 'cache_read', 'cache_write', 'output'], ...rows]
      .map((r) => r.map((c) => `"${String(c).replace(/"/g, '""')}"`).join(','));
    const a = el('a', { href: URL.createObjectURL(new Blob([lines.join('\n')], { type: 'text/csv' })), download: 'usage.csv' });
    document.body.append(a);
    a.click();
    a.remove();
  });
  await load();
}

// audit shows the audit log newest first, filtered by actor and action,
// a page of 50 at a time, with a JSON-lines download of what the filters
// select.
async function audit() {
  const actor = el('input', { id: 'audit-actor', placeholder: 'actor (key id, person, scim)' });
  const action = el('input', { id: 'audit-action', placeholder: 'action, e.g. key.create' });
  const box = el('div', {});
  const more = el('button', { type: 'button', hidden: true }, 'Older');
  const filters = () => {
    const q = new URLSearchParams({ limit: '50' });
    if (actor.value) q.set('actor', actor.value);
    if (action.value) q.set('action', action.value);
    return q;
  };
  let after = '';
  const fields = (f) => Object.entries(f || {}).map(([k, v]) => k + '=' + v).join(', ');
  const page = async (reset) => {
    const q = filters();
    if (!reset && after) q.set('after_id', after);
    const data = await api('/v1/organizations/audit_log?' + q);
    const rows = data.data.map((e) => [e.occurred_at.replace('T', ' ').replace('Z', ''), e.actor, e.action, e.target, fields(e.fields), e.source]);
    const t = table(['Time (UTC)', 'Actor', 'Action', 'Target', 'Changed', 'Source'], rows);
    if (reset) box.replaceChildren(t); else box.append(t);
    after = data.last_id || '';
    more.hidden = !data.has_more;
  };
  const download = async () => {
    const q = filters();
    q.delete('limit');
    q.set('format', 'jsonl');
    const res = await fetch('/v1/organizations/audit_log?' + q, { headers: { 'x-api-key': key(), 'anthropic-version': '2023-06-01' } });
    if (!res.ok) { say('Export failed: HTTP ' + res.status, true); return; }
    const a = el('a', { href: URL.createObjectURL(await res.blob()), download: 'audit_log.jsonl' });
    a.click();
    URL.revokeObjectURL(a.href);
  };
  more.addEventListener('click', () => page(false).catch((e) => say(e.message, true)));
  const form = el('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); page(true).catch((err) => say(err.message, true)); } },
    el('label', { for: 'audit-actor' }, 'Actor'), actor, el('label', { for: 'audit-action' }, 'Action'), action,
    el('button', { type: 'submit' }, 'Filter'), el('button', { type: 'button', onclick: download }, 'Export JSON lines'));
  view.replaceChildren(el('h2', {}, 'Audit log'), form, box, more);
  await page(true);
}

// mcpTools is the MCP gateway's tool calls over the last 30 days, per
// server and tool, from the MCP usage report.
async function mcpTools() {
  const rep = await api(`/v1/organizations/usage_report/mcp?starting_at=${daysAgo(30)}&bucket_width=1d&limit=31&group_by[]=server&group_by[]=tool`);
  const rows = {};
  rep.data.forEach((b) => b.results.forEach((r) => {
    const k = r.server + '\u0000' + r.tool;
    const t = rows[k] = rows[k] || { server: r.server, tool: r.tool, calls: 0, errors: 0, refused: 0, ms: 0, bytes: 0, approved: 0, notApproved: 0 };
    t.calls += r.calls; t.errors += r.errors; t.refused += r.refused; t.ms += r.duration_ms; t.bytes += r.bytes;
    t.approved += r.approved || 0; t.notApproved += (r.approval_denied || 0) + (r.approval_expired || 0);
  }));
  const list = Object.values(rows).sort((a, b) => b.calls - a.calls);
  if (!list.length) {
    view.replaceChildren(el('h2', {}, 'MCP tool calls, last 30 days'), el('p', { class: 'empty' }, 'No MCP tool calls yet.'));
    return;
  }
  view.replaceChildren(el('h2', {}, 'MCP tool calls, last 30 days'), el('div', { id: 'mcp-tools' }, table(['Server', 'Tool', 'Calls', 'Errors', 'Refused', 'Mean duration', 'Bytes', 'Approved', 'Denied or expired'],
    list.map((t) => [t.server, t.tool, num(t.calls), num(t.errors), num(t.refused), (t.ms / t.calls).toFixed(0) + ' ms', num(t.bytes), num(t.approved), num(t.notApproved)]), [2, 3, 4, 5, 6, 7, 8])));
}

// pullRequests is what each merged pull request cost over the last 30
// days of the work report (the agents' spend on its branch): the median,
// the ten dearest, and the trend by week of merging.
async function pullRequests() {
  const rep = await api(`/v1/organizations/usage_report/work?starting_at=${daysAgo(30)}&bucket_width=1d&limit=31&group_by[]=pull_request`);
  const prs = {};
  rep.data.forEach((b) => b.results.forEach((r) => {
    if (!r.pull_request) return;
    const k = r.repository + '#' + r.pull_request.number;
    const p = prs[k] = prs[k] || { repo: r.repository, pr: r.pull_request, cents: 0, sessions: 0 };
    p.cents += Number(r.amount); p.sessions += r.sessions;
  }));
  const merged = Object.values(prs).filter((p) => p.pr.state === 'merged' && p.pr.merged_at).sort((a, b) => b.cents - a.cents);
  const title = el('h2', {}, 'Cost per merged pull request, last 30 days');
  if (!merged.length) {
    view.replaceChildren(title, el('p', { class: 'empty' }, 'No merged pull request with agent spend yet: install the work hook (caddy agent-hook install) and the forge webhook (llm_forge).'));
    return;
  }
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
  const total = merged.reduce((n, p) => n + p.cents, 0);
  const weeks = {};
  merged.forEach((p) => {
    const d = new Date(p.pr.merged_at);
    const monday = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7)));
    (weeks[monday.toISOString().slice(0, 10)] = weeks[monday.toISOString().slice(0, 10)] || []).push(p.cents);
  });
  view.replaceChildren(title,
    el('div', { class: 'cards' },
      el('div', { class: 'card' }, el('div', {}, 'Merged'), el('div', { class: 'big' }, num(merged.length))),
      el('div', { class: 'card' }, el('div', {}, 'Median'), el('div', { class: 'big', id: 'pr-median' }, dollars(median(merged.map((p) => p.cents))))),
      el('div', { class: 'card' }, el('div', {}, 'Total'), el('div', { class: 'big' }, dollars(total)))),
    el('h3', {}, 'Top ten'),
    el('div', { id: 'pr-top' }, table(['Pull request', 'Merged', 'Sessions', 'Cost'],
      merged.slice(0, 10).map((p) => [p.repo + ' #' + p.pr.number + ' ' + p.pr.title, p.pr.merged_at.slice(0, 10), num(p.sessions), dollars(p.cents)]), [2, 3])),
    el('h3', {}, 'By week merged'),
    el('div', { id: 'pr-trend' }, table(['Week of', 'Merged', 'Median', 'Total'],
      Object.keys(weeks).sort().map((w) => [w, num(weeks[w].length), dollars(median(weeks[w])), dollars(weeks[w].reduce((n, c) => n + c, 0))]), [1, 2, 3])));
}

// secrets is the secret firewall's detections over the last 30 days, per
// person and rule (never a value: the ledger has none).
async function secrets() {
  const rep = await api(`/v1/organizations/secrets_report?starting_at=${daysAgo(30)}&bucket_width=1d&limit=31`);
  const title = el('h2', {}, 'Secrets caught, last 30 days');
  if (!rep.data.length) {
    view.replaceChildren(title, el('p', { class: 'empty' }, 'No secret has been found in a request or an answer.'));
    return;
  }
  view.replaceChildren(title, el('div', { id: 'secrets' }, table(['Person', 'Key', 'Rule', 'Model', 'Found', 'Redacted', 'Blocked', 'Logged', 'In answers', 'Last seen'],
    rep.data.map((r) => [r.person || '-', named('keys', r.api_key_id), r.rule, r.model, num(r.detections), num(r.redacted), num(r.blocked), num(r.logged), num(r.in_answers), r.last_seen]), [4, 5, 6, 7, 8])));
}

// approvals lists the MCP tool calls waiting for a person's approval
// (and the last decided ones); an admin approves or denies each once.
async function approvals() {
  const [pending, recent] = await Promise.all([api('/v1/organizations/mcp_approvals?state=pending&limit=200'), api('/v1/organizations/mcp_approvals?limit=50')]);
  const now = Date.now();
  const waiting = pending.data.filter((a) => Date.parse(a.expires_at) > now);
  const decide = (a, verb) => async () => {
    try {
      await api(`/v1/organizations/mcp_approvals/${encodeURIComponent(a.id)}/${verb}`, { method: 'POST' });
      say(`${verb === 'approve' ? 'Approved' : 'Denied'} ${a.id}.`);
    } catch (e) { say(e.message, true); return; }
    await approvals();
  };
  const who = (a) => a.person || named('keys', a.api_key_id);
  const rows = waiting.map((a) => [a.id, who(a), a.server + '/' + a.tool, el('code', {}, a.arguments), new Date(a.expires_at).toLocaleTimeString(),
    me.role === 'admin' ? el('span', {}, el('button', { type: 'button', class: 'approve', onclick: decide(a, 'approve') }, 'Approve'), ' ',
      el('button', { type: 'button', class: 'deny', onclick: decide(a, 'deny') }, 'Deny')) : '-']);
  const done = recent.data.filter((a) => a.state !== 'pending');
  view.replaceChildren(el('h2', {}, 'MCP approvals waiting'),
    rows.length ? el('div', { id: 'approvals-pending' }, table(['Approval', 'Caller', 'Tool', 'Arguments', 'Expires', ''], rows)) : el('p', { class: 'empty', id: 'approvals-pending' }, 'No tool call is waiting for approval.'),
    el('h2', {}, 'Recently decided'),
    table(['Approval', 'Caller', 'Tool', 'Arguments', 'State', 'Decided by'], done.map((a) => [a.id, who(a), a.server + '/' + a.tool, el('code', {}, a.arguments), a.state,
      a.decided_by ? a.decided_by + (a.via ? ' (' + a.via + ')' : '') : '-'])));
}

// connections is the signed-in person's own accounts at the MCP servers
// that act as them (auth: oauth, docs/mcp-upstream-auth.md): connect opens
// the authorization in this browser, disconnect forgets the grant.
async function connections() {
  const title = el('h2', {}, 'My MCP accounts');
  let rep;
  try {
    rep = await api('/mcp-connect/?format=json');
  } catch (e) {
    const why = e.status === 404 ? 'No MCP server of this gateway acts as you.' : 'Sign in with your identity provider to connect your own accounts.';
    view.replaceChildren(title, el('p', { class: 'empty', id: 'connections' }, why));
    return;
  }
  const disconnect = (c) => async () => {
    try {
      await api('/mcp-connect/disconnect/' + encodeURIComponent(c.server), { method: 'POST' });
      say('Disconnected ' + c.server + '.');
    } catch (e) { say(e.message, true); return; }
    await connections();
  };
  const parts = [title, el('div', { id: 'connections' }, table(['Server', 'State', ''], rep.data.map((c) => [c.server,
    c.connected ? 'connected ' + c.connected_at.slice(0, 10) : 'not connected',
    el('span', {}, el('a', { href: c.connect_url }, c.connected ? 'Connect again' : 'Connect'),
      c.connected ? el('button', { type: 'button', onclick: disconnect(c) }, 'Disconnect') : '')])))];
  // An admin also sees the shared keys' grants: each acts upstream as the
  // admin who connected it, for every holder of the key.
  if (rep.key_grants && rep.key_grants.length) {
    const revoke = (g) => async () => {
      try {
        await api('/mcp-connect/disconnect/' + encodeURIComponent(g.server), { method: 'POST', body: { unit: g.unit } });
        say('Revoked key ' + g.key + "'s grant to " + g.server + '.');
      } catch (e) { say(e.message, true); return; }
      await connections();
    };
    parts.push(el('h3', {}, "Shared keys' grants"), el('div', { id: 'key-grants' }, table(['Server', 'Key', 'Since', ''], rep.key_grants.map((g) => [g.server,
      g.key, g.connected_at.slice(0, 10), el('button', { type: 'button', onclick: revoke(g) }, 'Revoke')]))));
  }
  view.replaceChildren(...parts);
}

const views = { overview, keys, workspaces, sessions, deployments, explorer, audit, mcp: mcpTools, pulls: pullRequests, secrets, approvals, connections };

async function show() {
  const name = (location.hash || '#overview').slice(1);
  const fn = views[name] || overview;
  document.querySelectorAll('nav a').forEach((a) => {
    if (a.dataset.view === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  });
  say('Loading…');
  view.replaceChildren();
  try {
    await loadNames();
    await fn();
    say('');
  } catch (e) {
    say(e.message, true);
  }
}

// offerIdP shows "Sign in with <IdP>" when the gateway has one, or says
// why the provider cannot be used now (key sign-in works regardless).
async function offerIdP() {
  let st = null;
  try {
    const res = await fetch('/auth/oidc/status', { headers: { accept: 'application/json' } });
    if (res.ok) st = await res.json();
  } catch (e) { st = null; }
  const box = $('#idp');
  if (!st || !st.enabled) { box.hidden = true; return; }
  box.hidden = false;
  const link = $('#idp-signin');
  link.textContent = 'Sign in with ' + st.name;
  // ?signed-in tells the page it came back from the provider with a session.
  link.href = st.login_url + '?return=' + encodeURIComponent('/ui/?signed-in' + location.hash);
  link.hidden = !st.ready;
  $('#idp-status').textContent = st.ready ? '' : ('Sign-in with ' + st.name + ' is unavailable: ' + st.error + '. Key sign-in still works.');
}

// A person's sign-in session is an HttpOnly cookie the page cannot see, so
// the page remembers that it signed one in (mg-person) and asks /v1/me
// only then or with a key: a visitor who is not signed in is no error, and
// gets no 401 (which the browser would log as one).
function mayBeSignedIn() {
  return Boolean(key() || localStorage.getItem('mg-person') || new URLSearchParams(location.search).has('signed-in'));
}

async function start() {
  me = null;
  if (mayBeSignedIn()) {
    try {
      // Without a key, the session cookie (if any) answers.
      me = await api('/v1/me');
    } catch (e) {
      me = null;
      if (key()) {
        sessionStorage.removeItem('mg-key');
        say(e.status === 401 ? 'That key was not accepted.' : e.message, true);
      } else if (e.status === 403) {
        say(e.message, true);
      }
    }
  }
  if (location.search) history.replaceState(null, '', location.pathname + location.hash);
  if (me && me.type === 'person') localStorage.setItem('mg-person', '1');
  else if (!key()) localStorage.removeItem('mg-person');
  if (!me) {
    $('#signin').hidden = false;
    $('#nav').hidden = true;
    await offerIdP();
    return;
  }
  $('#signin').hidden = true;
  $('#nav').hidden = false;
  $('#who').textContent = me.type === 'person' ? me.id + ' (' + me.role + ')' : '';
  document.querySelectorAll('[data-admin]').forEach((a) => { a.hidden = me.role !== 'admin' && me.role !== 'auditor'; });
  await show();
}

$('#signin').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem('mg-key', $('#key').value.trim());
  $('#key').value = '';
  start();
});
$('#signout').addEventListener('click', async () => {
  if (!key() && me && me.csrf_token) {
    try { await api('/auth/oidc/logout', { method: 'POST' }); } catch (e) { say(e.message, true); }
  }
  sessionStorage.removeItem('mg-key');
  localStorage.removeItem('mg-person');
  me = null;
  view.replaceChildren();
  start();
});
window.addEventListener('hashchange', show);
start();
