import { uuidv7, type SteerlineEvent, type TurnEvent } from '@steerline/contracts';
import { ensureStream } from '@steerline/runtime';
import { evolve } from '../../apps/engine/src/conversation/conversation.evolve';
import { initialConversation } from '../../apps/engine/src/conversation/conversation.state';
import { EventLog } from '../../apps/engine/src/log/event-log';
import { ConversationLine } from '../../apps/engine/src/turn/conversation.lines';
import { GrowingMap } from '../../apps/engine/src/turn/growing-map';
import { stampContext } from '../../apps/engine/src/turn/stamp';
import { execute } from '../../apps/engine/src/turn/turn.decider';
import { CONVERSATION_ID, TURN_ID, startCommand } from '../../apps/engine/src/turn/turn.fixtures';
import type { TurnCommand } from '../../apps/engine/src/turn/turn.commands';
import { initialState, type TurnState } from '../../apps/engine/src/turn/turn.state';
import { openNats, uniquePrefix, type NatsHandle } from '../support/env';

/** The line's state of the test's turn (none before the conversation exists). */
const turnOf = (line: ConversationLine): TurnState | undefined => (line.state.phase === 'none' ? undefined : line.state.turns.get(TURN_ID));

describe('a conversation line follows its running turn’s batches (real NATS log)', () => {
  let nats: NatsHandle;
  beforeAll(async () => {
    nats = await openNats(uniquePrefix());
    await ensureStream(nats.jsm, nats.s);
  });
  afterAll(() => nats?.close());
  afterEach(() => jest.restoreAllMocks());

  it('holds the runner’s own state after each batch of the turn’s own events, copies none of its steers, and equals the log evolved event by event', async () => {
    const line = new ConversationLine(new EventLog(nats.nc), nats.s.conversationEvents('default', CONVERSATION_ID), 0, []);
    const log: SteerlineEvent[] = [];
    const created = { id: uuidv7(), type: 'ConversationCreated', version: 1, tenantId: 'default', conversationId: CONVERSATION_ID, turnId: null, seq: 0, at: new Date().toISOString(), data: {} } as unknown as SteerlineEvent;
    await line.append([created] as TurnEvent[]);
    log.push(created);

    // As the runner does: decide from its state, append with the states before and after.
    const decide = async (from: TurnState, command: TurnCommand): Promise<TurnState> => {
      const { state, events } = execute(from, command, stampContext);
      await line.append(events, { from, to: state });
      log.push(...events);
      return state;
    };
    expect(line.state.phase).toBe('idle');
    await decide({ ...initialState(), turnId: TURN_ID, tenantId: 'default', conversationId: CONVERSATION_ID }, startCommand({ maxQueued: 100 }));
    expect(line.state).toMatchObject({ phase: 'running', running: TURN_ID });
    // The runner starts from the line's state of the turn (as the registry hands it over).
    let turn = turnOf(line)!;

    // A branch of a GrowingMap (a `set` on a version already grown) copies the steers so far.
    const copies = jest.spyOn(GrowingMap.prototype as unknown as { ownLog(): unknown }, 'ownLog');
    for (let i = 0; i < 40; i++) {
      turn = await decide(turn, { type: 'SubmitSteer', steerId: uuidv7(), text: `steer ${i}` });
      expect(turnOf(line)).toBe(turn);
    }
    expect(copies).not.toHaveBeenCalled();

    // A batch that ends the turn moves the phase: evolved event by event, as before.
    await decide(turn, { type: 'CancelTurn', reason: 'user' });
    expect(line.state.phase).toBe('idle');
    expect(line.state).toEqual(log.reduce(evolve, initialConversation()));
    expect((await nats.readAll()).map((e) => e.event.id)).toEqual(log.map((e) => e.id));
  });
});
