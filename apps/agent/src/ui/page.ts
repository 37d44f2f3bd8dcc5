/**
 * The local UI's page: static HTML and one script, served by server.ts (no build step, no
 * framework). Data is inserted with textContent only, never as HTML.
 */
export const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tributary agent</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2733; background: #f5f7fa; }
  header { background: #16435f; color: #fff; padding: 10px 20px; display: flex; gap: 16px; align-items: baseline; }
  header h1 { font-size: 18px; margin: 0; }
  main { padding: 12px 20px; display: grid; gap: 16px; max-width: 1100px; }
  section { background: #fff; border: 1px solid #d8dee6; border-radius: 6px; padding: 10px 14px; }
  h2 { font-size: 15px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eef1f5; vertical-align: top; }
  th { font-weight: 600; color: #4a5868; }
  .empty { color: #6a7786; }
  .state-mounted, .state-done { color: #1d7a3a; }
  .state-failed, .state-interrupted, .state-unreachable { color: #b3261e; }
  progress { width: 160px; }
  label { display: inline-flex; flex-direction: column; margin-right: 16px; font-size: 13px; }
  input, select { font: inherit; padding: 3px 6px; width: 140px; }
  button { font: inherit; padding: 3px 10px; margin-right: 6px; cursor: pointer; }
  #settings-status { margin-left: 8px; }
  .error { color: #b3261e; }
</style>
</head>
<body>
<header><h1>Tributary agent</h1><span id="site">…</span></header>
<main>
  <section aria-labelledby="mounts-h"><h2 id="mounts-h">Mounts</h2><div id="mounts"></div></section>
  <section aria-labelledby="transfers-h"><h2 id="transfers-h">Transfers</h2><div id="transfers"></div></section>
  <section aria-labelledby="conflicts-h"><h2 id="conflicts-h">Conflicts that need you</h2><div id="conflicts"></div></section>
  <section aria-labelledby="settings-h"><h2 id="settings-h">Settings</h2>
    <form id="settings">
      <label>Site <select name="site" id="setting-site"></select></label>
      <label>Buffer (MiB) <input name="bufferMiB" type="number" min="1" max="1024" required></label>
      <label>Cache TTL (s) <input name="cacheTtlSeconds" type="number" min="0" max="3600" required></label>
      <label>Parallel files <input name="parallel" type="number" min="1" max="64" required></label>
      <button type="submit">Save</button><span id="settings-status" role="status"></span>
    </form>
  </section>
</main>
<script src="/app.js"></script>
</body>
</html>
`;

export const APP_JS = `'use strict';
const $ = (id) => document.getElementById(id);
function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; }
function size(n) { const u = ['B','KiB','MiB','GiB','TiB']; let i = 0; while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; } return (i ? n.toFixed(1) : n) + ' ' + u[i]; }
function table(headers, rows) {
  const t = el('table'); const h = el('tr'); headers.forEach((x) => h.appendChild(el('th', x))); t.appendChild(h);
  rows.forEach((r) => { const tr = el('tr'); r.forEach((c) => { const td = el('td'); if (c instanceof Node) td.appendChild(c); else td.textContent = c; tr.appendChild(td); }); t.appendChild(tr); });
  return t;
}
function fill(id, node) { const box = $(id); box.replaceChildren(node); }
async function api(path, init) {
  const res = await fetch(path, Object.assign({ credentials: 'same-origin', headers: { 'content-type': 'application/json' } }, init || {}));
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((body.error && body.error.message) || ('HTTP ' + res.status));
  return body;
}
let settingsLoaded = false;
async function refresh() {
  let s;
  try { s = await api('/api/state'); } catch (e) { $('site').textContent = 'agent unreachable: ' + e.message; return; }
  $('site').textContent = s.site ? (s.site.name + ' — ' + s.site.url + (s.site.user ? ' — ' + s.site.user : '') + (s.site.loggedIn ? '' : ' (not logged in)')) : 'no site: run trib login';
  fill('mounts', s.mounts.length === 0 ? el('p', 'No mounts. Start one with trib mount <remote> <local-dir>.', 'empty') :
    table(['Mountpoint', 'Remote', 'Site', 'State', 'Read', 'Written', 'Errors'], s.mounts.map((m) => {
      const live = m.state === 'mounting' || m.state === 'mounted' || m.state === 'unreachable';
      const state = el('span', live && !m.alive ? m.state + ' (process gone)' : m.state, 'state-' + m.state);
      if (m.lastError) state.title = m.lastError;
      return [m.mountpoint, m.remote, m.site, state, size(m.stats.bytesRead), size(m.stats.bytesWritten), String(m.stats.errors)];
    })));
  fill('transfers', s.transfers.length === 0 ? el('p', 'No transfers yet. trib put and trib get show up here.', 'empty') :
    table(['', 'From', 'To', 'Progress', 'Files', 'State'], s.transfers.map((t) => {
      const p = el('progress'); p.max = Math.max(1, t.bytesTotal); p.value = t.bytesDone;
      const cell = el('span'); cell.appendChild(p); cell.appendChild(el('span', ' ' + size(t.bytesDone) + ' / ' + size(t.bytesTotal)));
      const state = el('span', t.state, 'state-' + t.state); if (t.error) state.title = t.error;
      return [t.direction, t.source, t.target, cell, t.filesDone + '/' + t.filesTotal, state];
    })));
  if (!settingsLoaded) {
    const f = $('settings');
    const select = $('setting-site'); select.replaceChildren();
    s.sites.forEach((x) => { const o = el('option', x.name + ' (' + x.url + ')'); o.value = x.name; if (s.site && s.site.name === x.name) o.selected = true; select.appendChild(o); });
    f.bufferMiB.value = s.settings.bufferMiB; f.cacheTtlSeconds.value = s.settings.cacheTtlSeconds; f.parallel.value = s.settings.parallel;
    settingsLoaded = true;
  }
}
async function refreshConflicts() {
  let c;
  try { c = await api('/api/conflicts'); } catch (e) { fill('conflicts', el('p', 'Cannot reach the site: ' + e.message, 'error')); return; }
  fill('conflicts', c.items.length === 0 ? el('p', 'No conflicts need you.', 'empty') :
    table(['Kind', 'What', 'Versions', 'Deadline', ''], c.items.map((x) => {
      const actions = el('span');
      if (x.canDecide) {
        const keep = el('button', 'Keep provisional'); keep.type = 'button'; keep.onclick = () => decide(x.id, { action: 'keep' }); actions.appendChild(keep);
        x.versions.filter((v) => !v.provisionalWinner).forEach((v) => { const b = el('button', 'Choose ' + v.site); b.type = 'button'; b.onclick = () => decide(x.id, { action: 'choose', version: v.index }); actions.appendChild(b); });
      }
      return [x.kind, x.path || (x.table + ' ' + x.recordId), x.versions.map((v) => v.site + (v.provisionalWinner ? ' (provisional)' : '')).join(', '), new Date(x.deadline).toLocaleString(), actions];
    })));
}
async function decide(id, body) {
  try { await api('/api/conflicts/' + id + '/decision', { method: 'POST', body: JSON.stringify(body) }); } catch (e) { alert('Could not decide: ' + e.message); }
  refreshConflicts();
}
$('settings').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = ev.target; const status = $('settings-status');
  const body = { bufferMiB: Number(f.bufferMiB.value), cacheTtlSeconds: Number(f.cacheTtlSeconds.value), parallel: Number(f.parallel.value) };
  if (f.site.value) body.site = f.site.value;
  try { await api('/api/settings', { method: 'PUT', body: JSON.stringify(body) }); status.textContent = 'Saved.'; status.className = ''; }
  catch (e) { status.textContent = e.message; status.className = 'error'; }
});
refresh(); refreshConflicts();
setInterval(refresh, 1000); setInterval(refreshConflicts, 15000);
`;
