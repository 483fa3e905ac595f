import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { natsAuthProblem } from '@steerline/runtime';
import { NATS_CONNECTION } from '../nats/nats.tokens';
import { EventLogClient } from '../nats/event-log.client';
import { ReadModelsClient } from '../nats/read-models.client';

/** Each probe gets this long; a probe that hangs is a failed probe. */
const PROBE_TIMEOUT_MS = 2_000;

export type CheckResult = 'ok' | string;
export interface Readiness {
  ready: boolean;
  checks: { nats: CheckResult; stream: CheckResult; database: CheckResult };
}

/** NATS connected, the event stream present, the database reachable through persistence (docs/design.md §5). */
@Injectable()
export class ReadinessProbe {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(ReadModelsClient) private readonly reads: ReadModelsClient,
    @Inject(EventLogClient) private readonly eventLog: EventLogClient,
  ) {}

  async check(): Promise<Readiness> {
    const nats = await probe(async () => {
      if (this.nc.isClosed() || this.nc.isDraining()) throw new Error('connection closed');
      const refused = natsAuthProblem(this.nc);
      if (refused) throw new Error(`NATS refuses the credentials: ${refused}`);
      await this.nc.rtt();
    });
    // Without NATS the other two can only time out; say so at once.
    if (nats !== 'ok') return { ready: false, checks: { nats, stream: 'not checked', database: 'not checked' } };
    const [stream, database] = await Promise.all([probe(() => this.eventLog.assertStream()), probe(() => this.databaseUp())]);
    return { ready: stream === 'ok' && database === 'ok', checks: { nats, stream, database } };
  }

  private async databaseUp(): Promise<void> {
    const reply = await this.reads.health(PROBE_TIMEOUT_MS);
    if (reply?.database !== true) throw new Error('persistence reports the database down');
  }
}

async function probe(check: () => Promise<void>): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  } finally {
    clearTimeout(timer);
  }
}
