import { Client } from 'pg';

const MEMBERS_KEY = 'steerline-projector-members';

/**
 * One PostgreSQL session per persistence instance that holds everything the
 * instance's projection rests on:
 *
 * - a shared advisory lock every live instance holds on the same key: counting
 *   its holders (`pg_locks`) says how many instances share the partitions, with
 *   no heartbeat to expire; a killed instance's session ends and its locks with it;
 * - one exclusive advisory lock per partition it projects: the writer of a
 *   partition is the holder of its lock;
 * - LISTEN on the generation channel: it is the one connection kept open and
 *   idle, so a rebuild's "generation switched" notification arrives here.
 *
 * If the session drops, every lock is gone: `held` turns false and the
 * partitions' loops stop writing at their next batch.
 */
export class PartitionLocks {
  private client?: Client;
  private lost = false;
  private readonly partitions = new Set<string>();

  constructor(
    private readonly databaseUrl: string,
    /** Names the group: instances projecting the same read models share partitions. */
    private readonly group: string,
    private readonly listen: { channel: string; onNotify: (payload: string | undefined) => void },
  ) {}

  /** Whether the session (and so every lock taken on it) is alive. */
  get connected(): boolean {
    return this.client !== undefined && !this.lost;
  }

  holds(key: string): boolean {
    return this.connected && this.partitions.has(key);
  }

  /** Opens the session and joins the group; again after the session dropped. */
  async join(): Promise<void> {
    if (this.connected) return;
    await this.close();
    const client = new Client({ connectionString: this.databaseUrl, application_name: `steerline-projector-lock:${process.pid}` });
    const drop = () => {
      if (this.client === client) this.lost = true;
    };
    client.on('error', drop);
    client.on('end', drop);
    client.on('notification', (n) => {
      if (n.channel === this.listen.channel && this.client === client) this.listen.onNotify(n.payload);
    });
    await client.connect();
    try {
      await client.query('SELECT pg_advisory_lock_shared(hashtext($1), hashtext($2))', [MEMBERS_KEY, this.group]);
      await client.query(`LISTEN ${quoteChannel(this.listen.channel)}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    this.client = client;
    this.lost = false;
    this.partitions.clear();
  }

  /** The live instances of the group, this one included. */
  async members(): Promise<number> {
    const { rows } = await this.session().query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_locks
       WHERE locktype = 'advisory' AND objsubid = 2 AND granted
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND classid = (hashtext($1)::bigint & 4294967295)::oid AND objid = (hashtext($2)::bigint & 4294967295)::oid`,
      [MEMBERS_KEY, this.group],
    );
    return Math.max(1, Number(rows[0]?.n ?? 1));
  }

  /** Tries once; false when another instance holds it. */
  async tryAcquire(key: string): Promise<boolean> {
    if (this.holds(key)) return true;
    const { rows } = await this.session().query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [key]);
    if (rows[0]?.ok !== true) return false;
    this.partitions.add(key);
    return true;
  }

  async release(key: string): Promise<void> {
    if (!this.partitions.delete(key) || !this.connected) return;
    await this.client!.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => undefined);
  }

  /** Ends the session: every lock is released. */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.partitions.clear();
    await client?.end().catch(() => undefined);
  }

  private session(): Client {
    if (!this.connected) throw new Error('the projector lock session is not connected');
    return this.client!;
  }
}

function quoteChannel(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
