/**
 * `npm run bench:rebuild`: writes a million events of realistic conversations
 * into a fresh stream (BENCH_EVENTS to change the count), then times
 * `npm run rebuild` (replay and switch) and `npm run audit` over them, each as
 * its own process with its peak resident memory sampled, beside a raw batched
 * INSERT measured in the same run. No service runs meanwhile, so the rebuild
 * has the machine to itself (the live projector would otherwise replay the
 * same million events into the generation being replaced). Writes its rows to
 * docs/performance.md between the `bench-rebuild` markers.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import readline from 'node:readline';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { subjects } from '@steerline/contracts';
import { connectNats } from '@steerline/runtime';
import { writeConversations } from './log-writer';
import { deleteStreams, dropDatabase } from './processes';
import { measurePostgres } from './raw';
import { renderReport, type Row } from './report';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const PG_SERVER = (process.env.BENCH_PG_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres').replace(/\/[^/]*$/, '');
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);

interface ToolRun {
  seconds: number;
  peakRssMiB: number;
  lines: string[];
  code: number | null;
}

/** Peak resident set of a live process so far (the kernel's high-water mark); NaN once it is gone. */
function peakRssMiB(pid: number): number {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

/** Runs one of dist/scripts as its own process, reading its peak resident memory every 100 ms. */
async function runTool(script: string, args: string[], env: Record<string, string>): Promise<ToolRun> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [join(__dirname, '..', script), ...args], { env: { ...process.env, ...env, CI: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr]) readline.createInterface({ input: stream }).on('line', (l) => {
    lines.push(l);
    if (l.includes('progress') || l.includes('events (')) process.stderr.write(`  ${l}\n`);
  });
  let peak = 0;
  const sampler = setInterval(() => {
    const now = peakRssMiB(child.pid!);
    if (Number.isFinite(now)) peak = Math.max(peak, now);
  }, 100);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearInterval(sampler);
  return { seconds: (performance.now() - t0) / 1000, peakRssMiB: peak, lines, code };
}

/** Events per second an ordered consumer reads the stream with, doing nothing with them: the audit's floor. */
async function measureRead(nc: NatsConnection, prefix: string, count: number): Promise<number> {
  const t0 = performance.now();
  const consumer = await jetstream(nc).consumers.get(subjects(prefix).stream, { deliver_policy: DeliverPolicy.All });
  const messages = await consumer.consume({ max_messages: 4_096 });
  let n = 0;
  for await (const _ of messages) if (++n >= count) break;
  await messages.close();
  return count / ((performance.now() - t0) / 1000);
}

async function main(): Promise<void> {
  const prefix = `benchrb${randomBytes(4).toString('hex')}`;
  const database = `steerline_${prefix}`;
  const env = { NATS_URL, STEERLINE_PREFIX: prefix, DATABASE_URL: `${PG_SERVER}/${database}` };
  const log = (m: string) => process.stderr.write(`bench:rebuild: ${m}\n`);
  const nc = await connectNats(NATS_URL, 'bench-rebuild');
  try {
    log(`writing ${EVENTS} events to prefix ${prefix}`);
    const w0 = performance.now();
    let shown = 0;
    const written = await writeConversations(nc, prefix, EVENTS, {
      onProgress: (n) => {
        if (n - shown >= 100_000) log(`  ${(shown = n)} written`);
      },
    });
    const writeSeconds = (performance.now() - w0) / 1000;
    log(`${written} events written in ${writeSeconds.toFixed(1)} s`);

    log('rebuild');
    const rebuild = await runTool('rebuild.js', [], env);
    if (rebuild.code !== 0) throw new Error(`rebuild exited ${rebuild.code}:\n${rebuild.lines.slice(-10).join('\n')}`);
    const report = rebuild.lines.map((l) => (l.includes('rebuild complete') ? (JSON.parse(l) as { message?: { durationMs?: number; messages?: number } }) : undefined)).find(Boolean)?.message;
    const rebuildSeconds = (report?.durationMs ?? rebuild.seconds * 1000) / 1000;

    log('audit');
    const audit = await runTool('audit.js', ['--prefix', prefix, '--settled'], env);
    if (audit.code !== 0) throw new Error(`audit exited ${audit.code}:\n${audit.lines.slice(-10).join('\n')}`);
    const audited = Number(/audited (\d+) events/.exec(audit.lines.join('\n'))?.[1] ?? 0);

    log('raw batched INSERT');
    const raw = await measurePostgres(env.DATABASE_URL);
    log('raw read of the log');
    const read = await measureRead(nc, prefix, written);

    const rows: Row[] = [
      { group: 'raw', name: 'PostgreSQL batched INSERT (500 rows/tx)', value: raw, unit: 'rows/s' },
      { group: 'raw', name: `JetStream ordered-consumer read of the ${written} events, no decoding`, value: read, unit: 'events/s' },
      { group: 'raw', name: `JetStream publish of the log, ${written} events, 4 000 acks in flight`, value: written / writeSeconds, unit: 'events/s' },
      { group: 'steerline', name: `rebuild of ${written} events (replay and switch)`, value: written / rebuildSeconds, unit: 'events/s', floor: raw, floorName: 'raw batched INSERT', target: '≥ 16 700 events/s' },
      { group: 'steerline', name: 'rebuild, the whole command with its start-up', value: written / rebuild.seconds, unit: 'events/s' },
      { group: 'steerline', name: `audit of ${audited} events (I1–I6, --settled)`, value: audited / audit.seconds, unit: 'events/s', floor: read, floorName: 'raw read of the log', target: '≥ 50 000 events/s' },
      { group: 'memory', name: 'rebuild process, peak RSS', value: rebuild.peakRssMiB, unit: 'MiB' },
      { group: 'memory', name: 'audit process, peak RSS', value: audit.peakRssMiB, unit: 'MiB' },
    ];
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
    const out = renderReport(rows, machine, 'bench-rebuild');
    console.log(out.table);
    if (process.env.BENCH_WRITE !== '0') await out.write(join(__dirname, '../../../docs/performance.md'));
  } finally {
    await deleteStreams(nc, prefix);
    await nc.close();
    await dropDatabase(PG_SERVER, database);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench:rebuild failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
