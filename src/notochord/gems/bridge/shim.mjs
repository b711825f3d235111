// The JavaScript side of a gem tool process: gives the tool the seed's `ctx` and runs it once.
//
// Started (already confined) by child.py with the channel on stdin/stdout. Every ctx call becomes a
// {"type":"call"} line to the host; errors come back as JS Errors with the host's message and a `code`.
// stdout belongs to the channel: console output goes to stderr.
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const config = JSON.parse(process.argv[2]);
// The channel keeps the real stdout; whatever the tool writes to stdout itself goes to stderr.
const channelWrite = process.stdout.write.bind(process.stdout);
// The most one channel message may take, its newline included: protocol.MAX_LINE_BYTES on the host.
const MAX_LINE_BYTES = 64 * 1024 * 1024;
const MAX_REPORT = 100000;
const megabytes = (size) => `${Math.ceil(size / (1024 * 1024))} MB`;
const tooLarge = (what, line, advice) => {
  const err = new Error(`${what} ${megabytes(Buffer.byteLength(line) + 1)}, more than ${advice}`);
  err.name = 'GemError';
  err.code = 'E_GEM';
  return err;
};
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);
for (const name of ['log', 'info', 'debug', 'warn']) {
  console[name] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}

const pending = new Map();
let nextId = 0;
let resolveStart;
const started = new Promise((resolve) => { resolveStart = resolve; });

const inbound = (value) => {
  if (Array.isArray(value)) return value.map(inbound);
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === '$bytes') return Buffer.from(value.$bytes, 'base64');
    return Object.fromEntries(keys.map((k) => [k, inbound(value[k])]));
  }
  return value;
};
const outbound = (value) => {
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('base64') };
  if (Array.isArray(value)) return value.map(outbound);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, outbound(v)]));
  }
  return value;
};
const toError = (error) => {
  const err = new Error(error.message);
  err.name = error.name || 'Error';
  err.code = error.code;
  Object.assign(err, error.attributes || {});
  return err;
};
// An HTTP response (it carries bodyBase64) answers text(), json() and bytes() like fetch's Response.
const withBody = (value) => {
  if (value && typeof value === 'object' && typeof value.bodyBase64 === 'string') {
    const body = Buffer.from(value.bodyBase64, 'base64');
    return { ...value, text: async () => body.toString('utf8'), json: async () => JSON.parse(body.toString('utf8')), bytes: async () => new Uint8Array(body), arrayBuffer: async () => body.buffer.slice(body.byteOffset, body.byteOffset + body.length) };
  }
  return value;
};

createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.type === 'start') return resolveStart(message);
  const call = pending.get(message.id);
  if (!call) return;
  pending.delete(message.id);
  if (message.type === 'result') call.resolve(withBody(inbound(message.value)));
  else call.reject(toError(message.error));
});

const call = (method, args) => new Promise((resolve, reject) => {
  const id = ++nextId;
  const line = JSON.stringify({ type: 'call', id, method, args: outbound(args), kwargs: {} });
  if (Buffer.byteLength(line) + 1 > MAX_LINE_BYTES) {
    reject(tooLarge(`ctx.${method} was given`, line,
      `one call may carry (${megabytes(MAX_LINE_BYTES)}, bytes counting a third more); pass less at a time`));
    return;
  }
  pending.set(id, { resolve, reject });
  channelWrite(line + '\n');
});

const remote = (path) => new Proxy(function () {}, {
  get: (_target, name) => (typeof name === 'string' && name !== 'then' ? remote(`${path}.${name}`) : undefined),
  apply: (_target, _this, args) => call(path, args),
});

const finish = (message) => {
  let line = JSON.stringify(message);
  if (message.type === 'done' && Buffer.byteLength(line) + 1 > MAX_LINE_BYTES) {
    const err = tooLarge("the tool's output is", line,
      `a run may return (${megabytes(MAX_LINE_BYTES)}); leave a large result in a file and return its path`);
    message = { type: 'failed', error: { name: err.name, message: err.message, code: err.code, trace: '' } };
    line = JSON.stringify(message);
  }
  channelWrite(line + '\n', () => process.exit(message.type === 'done' ? 0 : 1));
};

try {
  const start = await started;
  const module = await import(pathToFileURL(config.entry).href);
  const fn = config.export && config.export !== 'default' ? module[config.export] : module.default;
  if (typeof fn !== 'function') throw new Error(`${config.entry} has no default export function (input, ctx)`);
  const ctx = { runId: start.runId, gemId: start.gemId, tool: start.tool };
  for (const name of ['knowledge', 'http', 'extract', 'files', 'storage', 'data']) {
    ctx[name] = (start.capabilities || []).includes(name) ? remote(name) : null;
  }
  const output = await fn(inbound(start.input), ctx);
  finish({ type: 'done', output: outbound(output === undefined ? null : output) });
} catch (error) {
  // a failure's words are for a person: a message of megabytes would not fit the channel
  finish({ type: 'failed', error: { name: error?.name || 'Error', message: String(error?.message ?? error).slice(0, MAX_REPORT), code: error?.code || 'E_TOOL', trace: String(error?.stack || '').slice(-MAX_REPORT) } });
}
