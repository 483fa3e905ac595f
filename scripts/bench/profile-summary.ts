/**
 * Sums a V8 CPU profile (`node --cpu-prof`, e.g. probe-steer.ts with BENCH_PROFILE) by
 * layer, over its steady state: the samples after the first `--skip` fraction of the
 * run (start-up and warm-up), idle time left out.
 *
 *   node dist/scripts/bench/profile-summary.js <file.cpuprofile> [--skip 0.5] [--by layer|package|function] [--top 30]
 *
 * `--from S --to S`: only the samples between those seconds of the profile instead (a phase of the
 * run, e.g. the 64-client blocks, found with `--by second`: the busy ms of each second).
 *
 * `--requests N`: also the CPU ms per request of each line (N requests in the window).
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface Profile {
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
  timeDeltas: number[];
}

// Which part of a request a package or file is: the order matters (first match wins).
const LAYERS: [RegExp, string][] = [
  [/\/(express|router|body-parser|raw-body|finalhandler|serve-static|type-is|accepts|on-finished|parseurl)\//, 'HTTP framework (Express)'],
  [/\/(fastify|@fastify\/[^/]+|find-my-way|light-my-request|avvio|fast-json-stringify|secure-json-parse|fast-querystring|@nestjs\/platform-fastify)\//, 'HTTP framework (Fastify)'],
  [/\/@nestjs\/platform-express\//, 'HTTP framework (Express)'],
  [/\/(@nestjs\/core|@nestjs\/common|rxjs|reflect-metadata)\//, 'Nest (routing, guards, pipes, interceptors)'],
  [/\/(pino|pino-http|sonic-boom|thread-stream|fast-redact|quick-format-unescaped|on-exit-leak-free|atomic-sleep|safe-stable-stringify)\//, 'request log (pino)'],
  [/\/prom-client\//, 'metrics (prom-client)'],
  [/\/zod\//, 'validation (zod)'],
  [/\/@nats-io\//, 'NATS client'],
  [/\/dist\/apps\/gateway\/src\/(auth|rate-limit)\//, 'auth and rate limit'],
  [/\/dist\/apps\/gateway\/src\/(observability)\//, 'request log (pino)'],
  [/\/dist\/apps\/gateway\/src\/http\//, 'gateway HTTP glue (params, errors)'],
  [/\/dist\/apps\/gateway\//, 'gateway own code'],
  [/\/dist\/apps\/engine\//, 'engine own code'],
  [/\/dist\/libs\//, 'contracts (codecs, ids)'],
  [/^node:(_http|http)/, 'node:http (parse, headers, write)'],
  [/^node:(net|stream|internal\/streams)/, 'node: sockets and streams'],
];
const NATIVE: Record<string, string> = { writev: 'socket writes', writeBuffer: 'socket writes', writeString: 'socket writes', writeUtf8String: 'socket writes', '(garbage collector)': 'garbage collection' };

function key(cf: CallFrame, by: string): string {
  const url = cf.url ?? '';
  if (by === 'function') return `${cf.functionName || '(anonymous)'} ${url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, 'dist/')}:${cf.lineNumber}`;
  if (by === 'package') return /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? (url ? url.replace(/.*\/dist\//, 'dist/') : cf.functionName);
  if (!url) return NATIVE[cf.functionName] ?? `native: ${cf.functionName}`;
  return LAYERS.find(([re]) => re.test(url))?.[1] ?? (url.startsWith('node:') ? 'node: other' : 'other');
}

function main(): void {
  const args = process.argv.slice(2);
  const opt = (name: string, dflt: string) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : dflt);
  const file = args.find((a) => a.endsWith('.cpuprofile'));
  if (!file) throw new Error('usage: profile-summary.js <file.cpuprofile> [--skip 0.5] [--by layer|package|function] [--top 30] [--requests N]');
  const skip = Number(opt('skip', '0.5'));
  const [from, to] = [Number(opt('from', 'NaN')) * 1e6, Number(opt('to', 'NaN')) * 1e6];
  const windowed = !Number.isNaN(from) || !Number.isNaN(to);
  const by = opt('by', 'layer');
  const top = Number(opt('top', '30'));
  const requests = Number(opt('requests', '0'));
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const span = profile.timeDeltas.reduce((a, b) => a + b, 0);
  const totals = new Map<string, number>();
  let t = 0;
  let busy = 0;
  let idle = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    t += dt;
    if (windowed ? t < (from || 0) || t > (to || Infinity) : t < skip * span) return;
    const cf = frames.get(id)!;
    if (cf.functionName === '(idle)') return void (idle += dt);
    busy += dt;
    const k = by === 'second' ? String(Math.floor(t / 1e6)).padStart(4) : key(cf, by);
    totals.set(k, (totals.get(k) ?? 0) + dt);
  });
  const where = windowed ? `seconds ${from / 1e6 || 0}–${to / 1e6 || 'end'}` : `after the first ${skip * 100}%`;
  console.log(`${file}: busy ${(busy / 1e3).toFixed(0)} ms, idle ${(idle / 1e3).toFixed(0)} ms (${where})`);
  const sorted = by === 'second' ? [...totals].sort((a, b) => Number(a[0]) - Number(b[0])) : [...totals].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [k, us] of sorted) {
    const per = requests ? `  ${(us / 1e3 / requests).toFixed(3)} ms/req` : '';
    console.log(`${(us / 1e3).toFixed(1).padStart(8)} ms ${((100 * us) / busy).toFixed(1).padStart(5)}%${per}  ${k}`);
  }
}

main();
