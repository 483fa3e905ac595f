import { isTerminalTurnEvent } from '@steerline/contracts';
import { eventually } from '../support/env';
import { npmStartSuite } from '../support/npm-start';

/** Durable turns under `npm start`: Ctrl-C (SIGTERM) in the middle of a turn, start again, the turn goes on. */
describe('npm start stopped and started again', () => {
  const suite = npmStartSuite();

  async function start(): Promise<{ url: string; stop(): Promise<number | null> }> {
    const { child, lines, exited } = suite.run();
    const url = await eventually(() => lines.map((l) => /Steerline is ready: (\S+)/.exec(l)?.[1]).find(Boolean), 60_000, 'Steerline is ready');
    return {
      url,
      stop() {
        child.kill('SIGTERM');
        return exited;
      },
    };
  }
  const post = async (url: string, path: string, body: unknown = {}) =>
    (await fetch(`${url}/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<any>;

  it('continues every running turn: the queued steer is delivered and the turn completes', async () => {
    const first = await start();
    const { id: cid } = await post(first.url, '/conversations');
    const { turnId } = await post(first.url, `/conversations/${cid}/turns`, {
      prompt: 'survive a restart',
      // 6 s: the steer and the whole Ctrl-C of every app happen inside the tool, however busy the machine.
      model: { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 6000 } } }, { text: 'done' }] },
    });
    await eventually(async () => ((await suite.nats.readAll()).some((e) => e.event.type === 'ToolCallStarted') ? true : undefined), 20_000, 'the tool to start');
    const { steerId } = await post(first.url, `/turns/${turnId}/steers`, { text: 'keep going after the restart' });
    expect(await first.stop()).toBe(0);

    const second = await start();
    const events = await eventually(async () => {
      const all = (await suite.nats.readAll()).filter((e) => e.event.turnId === turnId);
      return all.some((e) => isTerminalTurnEvent(e.event)) ? all : undefined;
    }, 60_000, 'the turn to end after the restart');
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    expect(events.map((e) => e.event.type)).toContain('TurnResumed');
    expect(events.find((e) => e.event.type === 'SteeringDelivered')?.event.data).toMatchObject({ steerId });
    const turn = await eventually(async () => {
      const view = (await (await fetch(`${second.url}/v1/turns/${turnId}`)).json()) as { status: string; resumes: number };
      return view.status === 'completed' ? view : undefined;
    }, 20_000, 'the read model to show the completed turn');
    expect(turn.resumes).toBe(1);
    expect(await second.stop()).toBe(0);
  });
});
