import { Client } from 'pg';

/**
 * Makes one projector instance the writer. Batches must be applied in stream
 * order, and a durable consumer shared by several pullers hands out batches
 * in parallel; so every instance answers queries but only the holder of this
 * PostgreSQL session lock fetches. The lock lives as long as its connection:
 * if the holder dies, the server releases it and another instance takes over.
 */
export class LeaderLock {
  private client?: Client;
  private lost = false;

  /**
   * `listen`: the holder's session also LISTENs on this channel. It is the one
   * connection the projector keeps open and idle, so it is where a rebuild's
   * "generation switched" notification arrives.
   */
  constructor(
    private readonly databaseUrl: string,
    private readonly key: string,
    private readonly listen?: { channel: string; onNotify: (payload: string | undefined) => void },
  ) {}

  get held(): boolean {
    return this.client !== undefined && !this.lost;
  }

  /** Tries once; false when another instance holds the lock. */
  async tryAcquire(): Promise<boolean> {
    if (this.held) return true;
    await this.release();
    const client = new Client({ connectionString: this.databaseUrl, application_name: 'steerline-projector-lock' });
    // A dropped connection means the lock is gone: stop writing at the next batch.
    const drop = () => {
      if (this.client === client) this.lost = true;
    };
    client.on('error', drop);
    client.on('end', drop);
    await client.connect();
    let ok = false;
    try {
      const result = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [this.key]);
      if (result.rows[0]?.ok === true && this.listen) {
        const { channel, onNotify } = this.listen;
        client.on('notification', (n) => {
          if (n.channel === channel && this.client === client) onNotify(n.payload);
        });
        await client.query(`LISTEN ${quoteChannel(channel)}`);
      }
      ok = result.rows[0]?.ok === true;
    } finally {
      // Ending the session also releases a lock taken before a failed LISTEN.
      if (!ok) await client.end().catch(() => undefined);
    }
    if (!ok) return false;
    this.client = client;
    this.lost = false;
    return true;
  }

  async release(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}

function quoteChannel(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
