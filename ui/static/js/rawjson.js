// Exact JSON for showing what someone sent: the approvals inbox shows an
// agent's arguments from the response text itself, not from a parsed copy
// (which would reorder integer-like keys, round big numbers and drop
// duplicate keys).

// rawBodies finds, in a response's text, the `body` member of the
// top-level object (or of each object of a top-level array) and returns
// its tokens (undefined where there is none), so the arguments are shown
// from the text itself, not from a parsed copy (which would reorder
// integer-like keys, round big numbers and drop duplicate keys).
export function rawBodies(text) {
  const toks = tokenize(text || '');
  if (!toks) return [];
  let i = 0;
  const skip = () => { // skips one value, returning its token range
    const start = i;
    const t = toks[i];
    if (t.k === '{' || t.k === '[') {
      let depth = 0;
      do {
        if (toks[i].k === '{' || toks[i].k === '[') depth++;
        else if (toks[i].k === '}' || toks[i].k === ']') depth--;
        i++;
      } while (depth > 0 && i < toks.length);
    } else i++;
    return toks.slice(start, i);
  };
  const bodyOf = () => { // at a '{': the body member's tokens
    let found;
    i++; // {
    while (i < toks.length && toks[i].k !== '}') {
      if (toks[i].k === ',') { i++; continue; }
      const key = toks[i].v;
      i += 2; // key and colon
      const v = skip();
      if (key === '"body"') found = v;
    }
    i++; // }
    return found;
  };
  if (toks[0].k === '{') return [bodyOf()];
  const out = [];
  if (toks[0].k !== '[') return out;
  i = 1;
  while (i < toks.length && toks[i].k !== ']') {
    if (toks[i].k === ',') { i++; continue; }
    if (toks[i].k === '{') out.push(bodyOf()); else { skip(); out.push(undefined); }
  }
  return out;
}

const TOKEN = /\s*(?:([{}[\]:,])|("(?:[^"\\\u0000-\u001f]|\\.)*")|(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false|null))/y;

// tokenize splits JSON text into tokens {k: punctuation | 's' | 'n' | 'l',
// v: the text}; null when the text is not JSON's tokens.
function tokenize(text) {
  const out = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(text);
    if (!m) return /^\s*$/.test(text.slice(at)) ? out : null;
    if (m[1]) out.push({ k: m[1], v: m[1] });
    else if (m[2]) out.push({ k: 's', v: m[2] });
    else if (m[3]) out.push({ k: 'n', v: m[3] });
    else out.push({ k: 'l', v: m[4] });
  }
  return out.length ? out : null;
}

// pretty indents a value's tokens two spaces a level. Numbers and
// literals keep their text; a string is shown decoded and re-encoded
// (the service re-escapes <, > and & as \u003c...: the text the agent
// meant is shown, quotes and control characters escaped).
export function pretty(toks) {
  let out = '';
  let depth = 0;
  const nl = () => `\n${'  '.repeat(depth)}`;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    const next = toks[i + 1];
    switch (t.k) {
      case '{': case '[':
        if (next && (next.k === '}' || next.k === ']')) { out += t.v + next.v; i++; break; }
        depth++;
        out += t.v + nl();
        break;
      case '}': case ']':
        depth--;
        out += nl() + t.v;
        break;
      case ',': out += `,${nl()}`; break;
      case ':': out += ': '; break;
      case 's': {
        let s;
        try { s = JSON.stringify(JSON.parse(t.v)); } catch { s = t.v; }
        out += s;
        break;
      }
      default: out += t.v;
    }
  }
  return out;
}
