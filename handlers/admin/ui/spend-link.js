// The approvers' chat link (/ui/spend-requests/{id}?key=…): the link's
// token alone decides nothing, since the person asking reads the same
// chat. The page signs the approver in (a dashboard session, or the
// gateway's admin key for this tab), shows the request through the API,
// and its buttons POST the token with the approver's credentials; the
// gateway decides only for an admin or a lead of the person's group,
// never the person (docs/spend-limits-api.md §3).
'use strict';

(function () {
  const $ = (sel) => document.querySelector(sel);
  const id = $('#spend-link').dataset.id;
  const slot = 'mg-link:' + id;
  // The token leaves the address bar (and the sign-in's return address)
  // for this tab's storage.
  const params = new URLSearchParams(location.search);
  if (params.get('key')) sessionStorage.setItem(slot, params.get('key'));
  if (location.search) history.replaceState(null, '', location.pathname);
  const token = sessionStorage.getItem(slot) || '';
  const key = () => sessionStorage.getItem('mg-key') || '';
  // As the dashboard: /v1/me is asked only of a tab that may be signed in
  // (a key, a person's session this browser started, or the return from
  // the provider), so a visitor gets no 401 for the browser to log.
  const returned = params.has('signed-in');
  const mayBeSignedIn = () => Boolean(key() || localStorage.getItem('mg-person') || returned);
  let me = null;

  function say(text) { $('#link-status').textContent = text; }
  function dollars(cents) { return '$' + (Number(cents) / 100).toFixed(2); }

  async function call(path, opts = {}) {
    const headers = { 'anthropic-version': '2023-06-01' };
    if (key()) headers['x-api-key'] = key();
    else if (me && me.csrf_token && opts.method === 'POST') headers['x-csrf-token'] = me.csrf_token;
    if (opts.body) headers['content-type'] = 'application/json';
    const res = await fetch(path, { method: opts.method || 'GET', headers, body: opts.body ? JSON.stringify(opts.body) : undefined });
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const err = new Error((data && data.error && data.error.message) || ('HTTP ' + res.status));
      err.status = res.status;
      throw err;
    }
    return data;
  }

  async function offerSignIn(why) {
    say(why);
    $('#link-signin').hidden = false;
    try {
      const res = await fetch('/auth/oidc/status', { headers: { accept: 'application/json' } });
      const st = res.ok ? await res.json() : null;
      if (st && st.enabled && st.ready) {
        const a = $('#link-idp');
        a.textContent = 'Sign in with ' + st.name;
        a.href = st.login_url + '?return=' + encodeURIComponent(location.pathname + '?signed-in');
        a.hidden = false;
      }
    } catch (e) { /* key sign-in still works */ }
  }

  async function decide(action) {
    $('#link-actions').hidden = true;
    try {
      const r = await call(location.pathname, { method: 'POST', body: { token, action } });
      sessionStorage.removeItem(slot);
      say('Done: the request is ' + r.status + '.');
    } catch (e) {
      say(e.message);
    }
  }

  async function start() {
    if (!token) { say('This link carries no token: open it from the chat message, or use the dashboard.'); return; }
    me = null;
    if (mayBeSignedIn()) {
      try { me = await call('/v1/me'); } catch (e) { me = null; }
    }
    if (me && me.type === 'person') localStorage.setItem('mg-person', '1');
    if (!me) { await offerSignIn('Sign in to see and decide this request.'); return; }
    $('#link-signin').hidden = true;
    let r;
    try {
      r = await call('/v1/organizations/spend_limit_increase_requests/' + encodeURIComponent(id));
    } catch (e) {
      say(e.status === 404 ? 'Signed in as ' + me.id + ', who may not see this request: admins and the leads of the person\'s groups decide it.' : e.message);
      return;
    }
    const box = $('#link-request');
    box.replaceChildren();
    const line = (text) => { const p = document.createElement('p'); p.textContent = text; box.append(p); };
    line(r.actor.user_id + ' asks for a ' + r.period + ' spend limit of ' + dollars(r.requested_amount) + '.');
    if (r.spend_summary && r.spend_summary.amount) line('Now ' + dollars(r.spend_summary.amount) + ', spent ' + dollars(r.spend_summary.period_to_date_spend) + '.');
    if (r.reason) line('Reason: ' + r.reason);
    box.hidden = false;
    if (r.status !== 'pending') { say('This request was already ' + r.status + '.'); return; }
    if (r.actor.user_id === me.id) { say('This is your own request: another approver decides it.'); return; }
    say('Signed in as ' + (me.id || 'the admin key') + '.');
    $('#link-actions').hidden = false;
  }

  $('#link-approve').addEventListener('click', () => decide('approve'));
  $('#link-deny').addEventListener('click', () => decide('deny'));
  $('#link-signin').addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem('mg-key', $('#link-key').value.trim());
    $('#link-key').value = '';
    start();
  });
  start();
}());
