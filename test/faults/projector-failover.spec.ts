import { ServiceProcess } from '../support/processes';
import { eventually } from '../support/env';
import { expectReadModelsMatchLog, projectedUpTo, publish, sampleConversation, persistenceProcessSuite } from './projector-support';

/** Two persistence instances and one partition: one projects, the other waits on the PostgreSQL advisory lock. */
describe('projector failover', () => {
  const suite = persistenceProcessSuite();
  beforeAll(() => Object.assign(suite.env, { STEERLINE_PARTITIONS: '1' }));

  const says = (p: ServiceProcess, msg: string) => eventually(() => p.lines.some((l) => l.includes(`"message":"${msg}"`)) || undefined, 15_000, `"${msg}" from pid ${p.pid}`);

  it('when the active instance is killed, the standby takes over from the checkpoint: nothing lost or doubled', async () => {
    const { nats, db, env, processes } = suite;
    const active = new ServiceProcess('persistence', env);
    processes.push(active);
    await says(active, 'projecting');
    const standby = new ServiceProcess('persistence', env);
    processes.push(standby);
    await standby.ready();
    await says(standby, 'another instance is projecting; standing by');

    const conversations = [sampleConversation(), sampleConversation(), sampleConversation()];
    const firstLast = await publish(nats, conversations.flatMap((c) => c.first));
    await projectedUpTo(nats, firstLast);

    // Events keep arriving while the active instance dies: some before, some after.
    const rest = conversations.flatMap((c) => c.rest);
    const appending = (async () => {
      let last = 0;
      for (const [i, event] of rest.entries()) {
        last = await publish(nats, [event]);
        if (i === 5) await active.kill();
      }
      return last;
    })();
    const lastSeq = await appending;
    expect(await active.exited).toMatchObject({ signal: 'SIGKILL' });

    await says(standby, 'projecting');
    const takeover = JSON.parse(standby.lines.find((l) => l.includes('"message":"projecting"'))!);
    expect(takeover.checkpoint).toBeGreaterThanOrEqual(firstLast);
    await projectedUpTo(nats, lastSeq);
    await expectReadModelsMatchLog(nats, db.url);
  });
});
