import { checkInvariants, type TurnEvent } from '@steerline/contracts';
import type { TurnCommand } from './turn.commands';
import { evolve } from './turn.evolve';
import { DEFAULT_LIMITS } from '@steerline/contracts';
import type { TurnEventDraft } from './turn.decider';
import { refused } from '../testing/decider-specification';
import { answerText, answerWithTools, given, newTurnState, progressOf, run, startCommand, steer, steerId, toolDone, types } from './turn.fixtures';

const resume = (rerunnable: string[] = ['sleep'], limit = 3): TurnCommand => ({ type: 'ResumeTurn', engineId: 'engine-next', limit, rerunnable });
/** The state another engine rebuilds from the first `n` events the log kept. */
const fromLog = (events: TurnEvent[], n = events.length) => events.slice(0, n).reduce(evolve, newTurnState());

const started: TurnEventDraft = { type: 'TurnStarted', data: { prompt: 'do the thing', model: { provider: 'scripted', name: 'scripted', script: [] }, limits: DEFAULT_LIMITS, engineId: 'engine-test' } };
const requested = (step: number): TurnEventDraft => ({ type: 'ModelRequested', data: { step, steerIds: [] } });
const resumedBy = (attempt = 1): TurnEventDraft => ({ type: 'TurnResumed', data: { engineId: 'engine-next', previousEngineId: 'engine-test', attempt } });

describe('resuming a turn, given / when / then', () => {
  it('given a turn waiting for the model, the resume is TurnResumed alone', () => {
    given([started, requested(1)]).when(resume()).then([resumedBy()]);
  });

  it('given a turn whose first request was not appended, the resume asks the model for step 1', () => {
    given([started]).when(resume()).then([resumedBy(), requested(1)]);
  });

  it('a turn that has not started cannot be resumed', () => {
    given().when(resume()).then(refused('turn_not_running'));
  });
});

describe('resuming a turn on another engine', () => {
  it('a turn waiting for the model resumes with TurnResumed only: the runner sends the same request again', () => {
    const before = run([startCommand(), steer(1)]);
    const { events, state } = run([resume()], before.state);
    expect(types(events)).toEqual(['TurnResumed']);
    expect(events[0].data).toEqual({ engineId: 'engine-next', previousEngineId: 'engine-test', attempt: 1 });
    expect(state).toMatchObject({ awaiting: 'model', step: 1, queue: [steerId(1)], engineId: 'engine-next', resumes: 1 });
  });

  it('queued steers stay queued across the move and are delivered once, at the next boundary', () => {
    const before = run([startCommand(), answerWithTools(1), steer(1), steer(2)]);
    const resumed = run([resume(), toolDone(1)], before.state);
    expect(types(resumed.events)).toEqual(['TurnResumed', 'ToolCallFinished', 'SteeringDelivered', 'SteeringDelivered', 'ModelRequested']);
    const all = [...before.events, ...resumed.events, ...run([answerText(2)], resumed.state).events];
    expect(checkInvariants(all.map((event) => ({ event })), { requireSettled: true })).toEqual([]);
  });

  it('an unfinished call of a tool that may not run twice ends interrupted, and the boundary follows', () => {
    const before = run([startCommand(), answerWithTools(1, 2), toolDone(1, 0), steer(1)]);
    const { events } = run([resume([])], before.state);
    expect(types(events)).toEqual(['TurnResumed', 'ToolCallFinished', 'SteeringDelivered', 'ModelRequested']);
    expect(events[1].data).toMatchObject({ toolCallId: 'call_1_1', ok: false, error: { code: 'interrupted' } });
  });

  it('an unfinished idempotent call is left running: no event for it, the runner runs it again', () => {
    const before = run([startCommand(), answerWithTools(1, 2), toolDone(1, 0)]);
    const { events, state } = run([resume(['sleep'])], before.state);
    expect(types(events)).toEqual(['TurnResumed']);
    expect(state).toMatchObject({ awaiting: 'tools' });
    expect(progressOf(state)).toEqual({ call_1_0: 'finished', call_1_1: 'started' });
  });

  it('what was decided but not appended before the crash is decided again', () => {
    const { events } = run([startCommand(), answerWithTools(1, 2), toolDone(1, 0), toolDone(1, 1), steer(1)]);
    const started = events.findIndex((e) => e.type === 'ModelResponded');
    // The log kept the answer but only the first of its two ToolCallStarted.
    expect(types(run([resume()], fromLog(events, started + 2)).events)).toEqual(['TurnResumed', 'ToolCallStarted']);
    // The log kept TurnStarted but not the first request.
    expect(types(run([resume()], fromLog(events, 1)).events)).toEqual(['TurnResumed', 'ModelRequested']);
    // The log kept the last tool result but not the boundary after it.
    const lastResult = events.findIndex((e) => e.type === 'ToolCallFinished' && e.data.toolCallId === 'call_1_1');
    expect(types(run([resume()], fromLog(events, lastResult + 1)).events)).toEqual(['TurnResumed', 'ModelRequested']);
  });

  it('a boundary cut short keeps its decision: the rest of the queue is delivered and the request carries every steer of it', () => {
    const { events } = run([startCommand(), answerWithTools(1), steer(1), steer(2), toolDone(1)]);
    const firstDelivery = events.findIndex((e) => e.type === 'SteeringDelivered');
    const resumed = run([resume()], fromLog(events, firstDelivery + 1));
    expect(types(resumed.events)).toEqual(['TurnResumed', 'SteeringDelivered', 'ModelRequested']);
    expect(resumed.events.at(-1)!.data).toEqual({ step: 2, steerIds: [steerId(1), steerId(2)] });
    const all = [...events.slice(0, firstDelivery + 1), ...resumed.events, ...run([answerText(2)], resumed.state).events];
    expect(checkInvariants(all.map((event) => ({ event })), { requireSettled: true })).toEqual([]);
  });

  it('a text-only answer whose turn end was not appended completes the turn, or continues with waiting steers', () => {
    const answered = run([startCommand(), answerText(1)]);
    expect(types(run([resume()], fromLog(answered.events, 3)).events)).toEqual(['TurnResumed', 'TurnCompleted']);
    const withSteer = run([startCommand(), steer(1), answerText(1)]);
    expect(types(run([resume()], fromLog(withSteer.events, 4)).events)).toEqual(['TurnResumed', 'SteeringDelivered', 'ModelRequested']);
  });

  it('a text-only answer whose end was cut off moves its next_turn steers to a follow-up turn on resume', () => {
    const next = '0190a000-0000-7000-8000-00000000f011';
    const { events } = run([
      startCommand(),
      { type: 'SubmitSteer', steerId: steerId(1), text: 'later', onTurnEnd: 'next_turn' },
      { type: 'RecordModelAnswer', step: 1, text: 'done', toolCalls: [], nextTurnId: next },
    ]);
    const answered = events.findIndex((e) => e.type === 'ModelResponded');
    const resumed = run([{ type: 'ResumeTurn', engineId: 'engine-next', limit: 3, rerunnable: [], nextTurnId: next }], fromLog(events, answered + 1));
    expect(types(resumed.events)).toEqual(['TurnResumed', 'SteerDropped', 'TurnCompleted']);
    expect(resumed.events[1].data).toMatchObject({ reason: 'moved_to_next_turn', nextTurnId: next });
  });

  it('past the resume limit the turn fails engine_lost, its steers dropped first', () => {
    let state = run([startCommand(), steer(1)]).state;
    for (let i = 0; i < 2; i++) state = run([resume(['sleep'], 2)], state).state;
    const { events } = run([resume(['sleep'], 2)], state);
    expect(events.map((e) => [e.type, (e.data as { reason?: string }).reason ?? (e.data as { error?: { code: string } }).error?.code])).toEqual([
      ['SteerDropped', 'engine_lost'],
      ['TurnFailed', 'engine_lost'],
    ]);
  });
});
