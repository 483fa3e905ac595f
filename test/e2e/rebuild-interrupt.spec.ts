import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import readline from 'node:readline';
import { Client } from 'pg';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';
import { writeConversations } from '../../scripts/bench/log-writer';

/**
 * Issue 25: Ctrl-C during `npm run rebuild` leaves the active generation
 * serving and the half-built one marked abandoned; the next rebuild drops it.
 * The rebuild runs as its own process from dist/, interrupted by a real SIGINT.
 */
const REBUILD = join(__dirname, '../../dist/scripts/rebuild.js');

function startRebuild(stack: Stack, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [REBUILD], {
    env: { ...process.env, ...stack.env, DATABASE_URL: stack.persistence.config.databaseUrl, CI: 'true', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  for (const s of [child.stdout, child.stderr]) readline.createInterface({ input: s }).on('line', (l) => lines.push(l));
  // 'close', not 'exit': by then every line it printed has been read.
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { child, lines, exited };
}

describe('npm run rebuild, interrupted', () => {
  let stack: Stack;
  let db: Client;
  const generations = async () =>
    (await db.query<{ id: number; status: string }>('SELECT id, status FROM projection_generations ORDER BY id')).rows;
  const active = async () => (await db.query<{ generation: number }>('SELECT generation FROM projection_active')).rows[0].generation;

  beforeAll(async () => {
    if (!existsSync(REBUILD)) throw new Error('dist/scripts/rebuild.js is missing: run `npm run build` (npm test does)');
    stack = await startStack({ engine: false });
    db = new Client({ connectionString: stack.persistence.config.databaseUrl });
    await db.connect();
    await writeConversations(stack.nats.nc, stack.prefix, 6_000, { tenants: ['default'], interleave: 20 });
    await stack.settled();
  });
  afterAll(async () => {
    await db?.end();
    await stack?.close();
  });

  it('Ctrl-C leaves the active generation answering and the half-built one abandoned; the next rebuild drops it and switches', async () => {
    const serving = await active();
    const [conversation] = (await db.query<{ id: string }>(`SELECT id FROM rm_${serving}.conversations LIMIT 1`)).rows;
    const before = await stack.api('GET', `/conversations/${conversation.id}`);
    expect(before.status).toBe(200);

    // Small batches (600 to replay), and the new generation's checkpoint held once it moved, so the SIGINT lands
    // mid-replay. The holding connection is open before the rebuild starts: only the lock itself races the replay.
    const hold = new Client({ connectionString: stack.persistence.config.databaseUrl });
    await hold.connect();
    const rebuild = startRebuild(stack, { STEERLINE_REBUILD_BATCH: '10' });
    const schema = `rm_${serving + 1}`;
    await eventually(async () => {
      const r = await db.query(`SELECT stream_seq FROM ${schema}.checkpoints`).catch(() => ({ rows: [] as { stream_seq: string }[] }));
      return r.rows.some((row) => Number(row.stream_seq) > 0) ? true : undefined;
    }, 20_000, 'the rebuild to commit its first batch');
    await hold.query('BEGIN');
    await hold.query(`LOCK TABLE ${schema}.checkpoints IN ACCESS EXCLUSIVE MODE`);
    rebuild.child.kill('SIGINT');
    await eventually(() => (rebuild.lines.some((l) => l.includes('SIGINT: stopping')) ? true : undefined), 10_000, 'the rebuild to take the SIGINT');
    await hold.query('ROLLBACK');
    await hold.end();

    expect(await rebuild.exited).toBe(130);
    expect(rebuild.lines.join('\n')).toContain('rebuild interrupted');
    expect(await active()).toBe(serving);
    expect(await generations()).toEqual([{ id: serving, status: 'built' }, { id: serving + 1, status: 'abandoned' }]);
    // The service still answers from the generation it had, exactly as before.
    expect(await stack.api('GET', `/conversations/${conversation.id}`)).toMatchObject({ status: 200, body: before.body });

    const again = startRebuild(stack);
    expect(await again.exited).toBe(0);
    expect(again.lines.join('\n')).toMatch(new RegExp(`dropped an inactive generation","generation":${serving + 1}\\b`));
    // The abandoned row and schema went; the new generation took the free id and is the active one, complete.
    expect(await generations()).toEqual([{ id: serving, status: 'built' }, { id: serving + 1, status: 'built' }]);
    expect(await active()).toBe(serving + 1);
    const [{ last_seq }] = (await db.query<{ last_seq: string }>(`SELECT stream_seq AS last_seq FROM ${schema}.checkpoints`)).rows;
    expect(Number(last_seq)).toBe((await stack.nats.jsm.streams.info(stack.nats.s.stream)).state.last_seq);
    expect(await stack.api('GET', `/conversations/${conversation.id}`)).toMatchObject({ status: 200, body: before.body });
  });
});
