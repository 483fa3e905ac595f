import { DEFAULT_LIMITS } from '@steerline/contracts';
import { evolve } from './turn.evolve';
import { initialState, type TurnState } from './turn.state';
import { newTurnState, run, startCommand } from './turn.fixtures';
import type { TurnCommand } from './turn.commands';

const agentFields = { instructions: 'Be brief.', settings: { temperature: 0.2, toolChoice: 'auto' as const }, tools: ['echo', 'mcp__files__*'], agent: { name: 'reviewer', version: 3 } };
const withAgent = (command: TurnCommand): TurnCommand => ({ ...command, ...agentFields }) as TurnCommand;
const specOfState = (state: TurnState) => (state.status === 'new' ? undefined : state.spec);

describe('a turn’s agent fields in the decider', () => {
  it('TurnStarted records them, and the state rebuilt from the log holds them in its spec', () => {
    const { events, state } = run([withAgent(startCommand())]);
    expect(events[0]).toMatchObject({ type: 'TurnStarted', data: agentFields });
    expect(specOfState(state)).toMatchObject(agentFields);
    expect(specOfState(events.reduce(evolve, initialState() as TurnState))).toMatchObject(agentFields);
  });

  it('a turn without them records none (no empty settings) and runs with the provider’s defaults and every tool', () => {
    const { events, state } = run([{ ...startCommand(), settings: {} } as TurnCommand]);
    expect(Object.keys(events[0].data)).toEqual(['prompt', 'model', 'limits', 'engineId']);
    const spec = specOfState(state)!;
    expect([spec.instructions, spec.settings, spec.tools, spec.agent]).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('a queued turn records them on TurnQueued and starts with them', () => {
    const model = { provider: 'scripted' as const, name: 'scripted', script: [] };
    const { events, state } = run([{ type: 'QueueTurn', prompt: 'later', model, limits: DEFAULT_LIMITS, ...agentFields, position: 1 }], newTurnState());
    expect(events[0]).toMatchObject({ type: 'TurnQueued', data: agentFields });
    expect(specOfState(state)).toMatchObject(agentFields);
  });
});
