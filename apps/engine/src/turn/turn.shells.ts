import type { Subscription } from '@nats-io/transport-node';
import { DEFAULT_MODEL, type ChatMessage } from '@steerline/contracts';
import type { LivePublisher } from '../live/live.publisher';
import type { ModelRegistry } from '../models/model.registry';
import type { ToolRegistry } from '../tools/tool.registry';
import type { RunningTurn } from './turn.state';
import { TurnRunner, type TurnLog } from './turn.runner';

export interface ShellDeps {
  models: ModelRegistry;
  tools: ToolRegistry;
  /** Subscribes the owner to a running turn's own subjects; returns the subscriptions to close at its end. */
  subscribeTurn: (runner: TurnRunner) => Subscription[];
  maxOutputBytes: () => number;
  live?: LivePublisher;
}

/**
 * The shells of the turns this engine runs, by turn, with their subjects. The
 * one place a shell is made (`open`): a turn whose loop runs in this engine
 * gets a TurnRunner; another kind of turn (its loop in an external process)
 * gets its own shell here, from the same state, history and log.
 */
export class TurnShells {
  private readonly runners = new Map<string, TurnRunner>();
  private readonly subscriptions = new Map<string, Subscription[]>();

  constructor(private readonly deps: ShellDeps) {}

  get size(): number {
    return this.runners.size;
  }

  get(turnId: string): TurnRunner | undefined {
    return this.runners.get(turnId);
  }

  all(): TurnRunner[] {
    return [...this.runners.values()];
  }

  /** A shell for a turn that started or resumed here, subscribed to its subjects; `onEnded` when it leaves. */
  open(log: TurnLog, state: RunningTurn, history: readonly ChatMessage[], onEnded: (runner: TurnRunner) => void): TurnRunner {
    const { models, tools, maxOutputBytes, live } = this.deps;
    const provider = models.has(state.spec.model.provider) ? state.spec.model.provider : DEFAULT_MODEL.provider;
    const runner = new TurnRunner(
      { writer: log, model: models.get(provider), tools, maxOutputBytes, live: live?.forTurn(state.tenantId, state.conversationId, state.turnId), onEnded },
      state,
      history,
    );
    this.runners.set(runner.turnId, runner);
    this.subscriptions.set(runner.turnId, this.deps.subscribeTurn(runner));
    return runner;
  }

  /** The shell left: its subjects are closed. */
  close(runner: TurnRunner): void {
    for (const sub of this.subscriptions.get(runner.turnId) ?? []) sub.unsubscribe();
    this.subscriptions.delete(runner.turnId);
    if (this.runners.get(runner.turnId) === runner) this.runners.delete(runner.turnId);
  }
}
