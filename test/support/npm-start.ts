import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import readline from 'node:readline';
import { createTestDatabase, openNats, uniquePrefix, type NatsHandle } from './env';
import { freePort } from './processes';

const ROOT = join(__dirname, '../..');

export interface NpmStartRun {
  child: ChildProcess;
  /** Its standard output and error, line by line, as they come. */
  lines: string[];
  exited: Promise<number | null>;
}

/**
 * For a suite that runs `npm start` (scripts/start.mjs): a fresh prefix and
 * database and a free gateway port (metrics on free ports unless a run says
 * otherwise), with what it started killed after the suite.
 */
export function npmStartSuite() {
  const state: { env: Record<string, string>; nats?: NatsHandle; db?: Awaited<ReturnType<typeof createTestDatabase>> } = { env: {} };
  const running: ChildProcess[] = [];
  beforeAll(async () => {
    const prefix = uniquePrefix();
    state.db = await createTestDatabase();
    state.nats = await openNats(prefix);
    state.env = { ...process.env, STEERLINE_PREFIX: prefix, DATABASE_URL: state.db.url, PORT: String(await freePort()), METRICS_PORT: '0' } as Record<string, string>;
  });
  afterAll(async () => {
    for (const p of running) if (p.exitCode === null) p.kill('SIGKILL');
    await state.nats?.close();
    await state.db?.drop();
  });
  return {
    get env() {
      return state.env;
    },
    get nats() {
      return state.nats!;
    },
    run(extra: Record<string, string> = {}): NpmStartRun {
      const lines: string[] = [];
      const child = spawn(process.execPath, [join(ROOT, 'scripts/start.mjs')], { cwd: ROOT, env: { ...state.env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
      running.push(child);
      for (const stream of [child.stdout!, child.stderr!]) readline.createInterface({ input: stream }).on('line', (l) => lines.push(l));
      // 'close', not 'exit': by then every line it printed has been read.
      const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
      return { child, lines, exited };
    },
  };
}
