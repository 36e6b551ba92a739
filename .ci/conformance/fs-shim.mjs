// node:fs plus globSync (added to node:fs in Node 22) for Node 20.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

// globToRegExp supports the subset the conformance suite uses: "**/",
// "*" and "?".
function globToRegExp(pattern) {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*' && pattern[i + 1] === '*') {
      i++;
      if (pattern[i + 1] === '/') {
        i++;
        re += '(?:.*/)?';
      } else {
        re += '.*';
      }
    } else if (c === '*') {
      re += '[^/]*';
    } else if (c === '?') {
      re += '[^/]';
    } else {
      re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp('^' + re + '$');
}

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const patterns = Array.isArray(pattern) ? pattern : [pattern];
  const res = patterns.map(globToRegExp);
  const out = [];
  const walk = (dir) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(cwd, dir), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const rel = dir ? `${dir}/${e.name}` : e.name;
      if (res.some((r) => r.test(rel))) out.push(rel);
      if (e.isDirectory()) walk(rel);
    }
  };
  walk('');
  return out;
}
