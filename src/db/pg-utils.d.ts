// pg's own parameter serialisation (pg/lib/utils, CommonJS), which @types/pg does not describe: the text pg sends
// for a parameter's value (null for null, a Buffer for binary values).
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): string | Buffer | null };
  export default utils;
}
