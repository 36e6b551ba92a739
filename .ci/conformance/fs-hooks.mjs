// Resolve hook: "fs" and "node:fs" become fs-shim.mjs, except for the shim itself.
const shim = new URL('./fs-shim.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== shim) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
