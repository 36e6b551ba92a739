// Node 20 lacks fs.globSync, which @modelcontextprotocol/conformance 0.1.16
// imports statically. This loader hook hands every import of "fs" a module
// that re-exports node:fs and adds a small globSync. Use:
//   node --import ./register.mjs node_modules/.bin/conformance ...
import { register } from 'node:module';

register('./fs-hooks.mjs', import.meta.url);
