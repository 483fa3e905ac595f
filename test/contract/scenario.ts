import { eventually } from '../support/env';
import { approve, type Stack } from '../support/stack';

export interface ScenarioSteer {
  turnId: string;
  steerId: string;
}

const wait = { Prefer: 'wait=30' };

/**
 * One run that writes every event type: a completed turn with a delivered and
 * a withdrawn steer, a cancelled turn with a steer still queued, a turn
 * whose model fails, a turn whose tool call waits for an approval, a turn
 * queued behind another, a turn resumed after its engine let it go, and
 * a turn whose answer an urgent steer cut.
 * Returns once every turn has ended and the projector has
 * caught up.
 */
export async function runSteeringScenario(stack: Stack): Promise<{ turnIds: string[]; steers: ScenarioSteer[] }> {
  const steers: ScenarioSteer[] = [];
  const turn = async (script: unknown[], extra: Record<string, unknown> = {}) => {
    const cid = (await stack.api('POST', '/conversations')).body.id;
    const started = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'Refactor the parser', model: { provider: 'scripted', script }, ...extra });
    if (started.status !== 202) throw new Error(`turn not started: ${started.status} ${JSON.stringify(started.body)}`);
    return started.body.turnId as string;
  };
  const steer = async (turnId: string, text: string, headers: Record<string, string> = {}) => {
    const r = await stack.api('POST', `/turns/${turnId}/steers`, { text }, headers);
    if (r.status >= 300 && r.status !== 409) throw new Error(`steer refused: ${r.status} ${JSON.stringify(r.body)}`);
    const steerId = (r.body.steerId ?? r.body.error?.steerId) as string;
    steers.push({ turnId, steerId });
    return steerId;
  };
  const sleep = (ms: number) => ({ tool: { name: 'sleep', args: { ms } } });
  // A sleep that waits for approval holds its turn at step 1 until `approve`, however slow the machine.
  const held = { approvals: { tools: ['sleep'] } };

  // Completed: one steer delivered at step 1, one withdrawn while queued.
  const completed = await turn([sleep(10), { tool: { name: 'echo', args: { text: 'step 2' } } }, { text: 'finished' }], held);
  await eventually(async () => ((await stack.api('GET', `/turns/${completed}`)).status === 200 ? true : undefined), 20_000, 'the turn to be projected');
  const withdrawn = await steer(completed, 'Drop the second idea');
  const edited = await stack.api('PATCH', `/turns/${completed}/steers/${withdrawn}`, { text: 'Drop the second idea, really' });
  if (edited.status !== 200) throw new Error(`edit failed: ${edited.status} ${JSON.stringify(edited.body)}`);
  const removed = await stack.api('DELETE', `/turns/${completed}/steers/${withdrawn}`);
  if (removed.status !== 200) throw new Error(`withdraw failed: ${removed.status} ${JSON.stringify(removed.body)}`);
  const kept = steer(completed, 'Keep the public API', wait);
  await stack.turnHas(completed, 'SteerQueued', { where: (d) => d.text === 'Keep the public API' });
  await approve(stack, completed);
  await kept;

  // Cancelled with a steer still queued: it is dropped turn_cancelled before TurnCancelled.
  const cancelled = await turn([sleep(3000), { text: 'never' }]);
  await new Promise((r) => setTimeout(r, 200));
  await steer(cancelled, 'Also update the docs');
  const cancel = await stack.api('POST', `/turns/${cancelled}/cancel`, {});
  if (cancel.status !== 202) throw new Error(`cancel failed: ${cancel.status}`);

  // Failed: the model itself fails at step 1.
  const failed = await turn([{ error: 'the model is down' }]);

  // Approval: its sleep waits for a person, who approves it.
  const approved = await turn([sleep(50), { text: 'approved and done' }], held);
  await approve(stack, approved);

  // Queued: a turn queued behind the approval turn starts once it ends.
  const cid = (await stack.api('POST', '/conversations')).body.id;
  const busy = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'first', model: { provider: 'scripted', script: [sleep(300)] }, ...held });
  const queued = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'then this', model: { provider: 'scripted', script: [] }, whenBusy: 'queue' });
  if (queued.status !== 202 || queued.body.status !== 'queued') throw new Error(`turn not queued: ${queued.status} ${JSON.stringify(queued.body)}`);
  await approve(stack, busy.body.turnId as string);

  // Resumed: its engine stops running it without settling it (as a stopping engine hands a turn over);
  // the engine's reaper finds the claim nobody runs and adopts it (TurnResumed), and the turn completes.
  // A 3 s tool: still running when it is handed over a moment later.
  const resumed = await turn([sleep(3000), { text: 'resumed and finished' }]);
  await eventually(() => stack.engine.service.turns?.turn(resumed), 20_000, 'the turn to run');
  await stack.engine.service.turns!.turn(resumed)!.handOver();

  // Interrupted: an urgent steer cuts a slowly written answer (ModelInterrupted) and is delivered at boundary interrupt.
  const interrupted = await turn([{ text: 'Rewriting every module from scratch, starting with the lexer', delayMs: 8000 }, { text: 'redirected' }]);
  await stack.turnHas(interrupted, 'ModelRequested');
  const urgent = await stack.api('POST', `/turns/${interrupted}/steers`, { text: 'Stop, only fix the parser', urgency: 'interrupt' }, wait);
  if (urgent.status !== 200 || urgent.body.boundary !== 'interrupt') throw new Error(`interrupt not delivered: ${urgent.status} ${JSON.stringify(urgent.body)}`);

  const turnIds = [completed, cancelled, failed, approved, busy.body.turnId as string, queued.body.turnId as string, resumed, interrupted];
  for (const id of turnIds) {
    const ended = async () => ['completed', 'cancelled', 'failed'].includes((await stack.api('GET', `/turns/${id}`)).body?.status) || undefined;
    await eventually(ended, 20_000, `turn ${id} to end`);
  }
  await stack.settled();
  return { turnIds, steers };
}
