function deep(root, sel, out) { out = out || []; root.querySelectorAll('*').forEach(el => { if (el.matches(sel)) out.push(el); if (el.shadowRoot) deep(el.shadowRoot, sel, out); }); return out; }
function text(root) { let t = ''; root.querySelectorAll('*').forEach(el => { if (el.shadowRoot) t += ' ' + text(el.shadowRoot); }); return t + ' ' + (root.textContent || ''); }
setTimeout(() => {
  const app = document.querySelector('mutation-test-report-app');
  const result = {rendered: !!app.shadowRoot, total: null};
  const cells = deep(document, 'td').map(td => td.textContent.trim());
  result.cells = cells.slice(0, 30);
  location.hash = '#mutant/' + Object.keys(app.report.files)[0].split('/').pop();
  setTimeout(() => {
    const buttons = deep(document, '[data-mutant-id]');
    result.mutantButtons = buttons.length;
    const spans = buttons.filter(b => b.tagName === 'SPAN'); result.spans = spans.length; const files = Object.values(app.report.files); const survivor = files.flatMap(f => f.mutants).find(m => m.status === 'Survived'); result.target = survivor.id; const span = spans.find(s => s.getAttribute('data-mutant-id') === survivor.id); if (span) span.click();
    setTimeout(() => {
      const drawer = deep(document, 'mte-drawer-mutant');
      result.diffRows = deep(document, 'tr.diff-new, .diff-new').length + deep(document, 'tr.diff-old, .diff-old').length; result.mode = drawer.length ? drawer[0].getAttribute('mode') : null; result.selected = drawer.length && drawer[0].mutant ? drawer[0].mutant.id : null; result.drawer = drawer.length ? (drawer[0].textContent + ' ' + text(drawer[0].shadowRoot)).replace(/\s+/g, ' ').slice(0, 400) : null;
      const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(result);
      document.body.appendChild(pre);
    }, 800);
  }, 800);
}, 800);
