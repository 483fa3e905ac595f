import type { TurnEvent } from '@steerline/contracts';
import type { TurnCommand } from './turn.commands';
import { hasRun, pendingApprovals, type TurnState } from './turn.state';

/**
 * The timers of one running turn: approval timeouts of calls waiting for a
 * person (docs/design.md §9) and deadlines of queued steers (§2, "Expiry"). Each only
 * sends a command; the decider refuses it when a decision or a boundary came
 * first. They live in the runner's memory, so an engine that adopts the turn
 * arms them again from the log (`rearm`).
 */
export class TurnDeadlines {
  /** Approval timeouts (`a:<toolCallId>`) and steer expiries (`s:<steerId>`): one map, as every running turn holds one. */
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly send: (command: TurnCommand) => void) {}

  /** Arms or disarms what an appended event asks for; `state` is what the log holds with it. */
  onEvent(e: TurnEvent, state: TurnState): void {
    if (e.type === 'ToolApprovalRequested') this.armApproval(e.data.toolCallId, e.at, timeoutOf(state));
    else if (e.type === 'ToolApprovalDecided') disarm(this.timers, `a:${e.data.toolCallId}`);
    else if (e.type === 'SteerQueued' && e.data.expiresAt) this.armExpiry(e.data.steerId, e.data.expiresAt);
    else if (e.type === 'SteeringDelivered' || e.type === 'SteerDropped') disarm(this.timers, `s:${e.data.steerId}`);
  }

  /** A resumed turn: calls still waiting get their timeout counted from the request, queued steers their expiry. */
  rearm(state: TurnState): void {
    if (!hasRun(state)) return;
    for (const a of pendingApprovals(state)) this.armApproval(a.toolCallId, a.approval.requestedAt, timeoutOf(state));
    for (const id of state.queue) {
      const steer = state.steers.get(id);
      if (steer?.expiresAt) this.armExpiry(id, steer.expiresAt);
    }
  }

  clear(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private armApproval(toolCallId: string, requestedAt: string, timeoutMs: number | undefined): void {
    if (timeoutMs === undefined) return;
    arm(this.timers, `a:${toolCallId}`, Date.parse(requestedAt) + timeoutMs, () => this.send({ type: 'DecideApproval', toolCallId, decision: 'denied', by: 'timeout' }));
  }

  private armExpiry(steerId: string, expiresAt: string): void {
    arm(this.timers, `s:${steerId}`, Date.parse(expiresAt), () => this.send({ type: 'ExpireSteer', steerId }));
  }
}

const timeoutOf = (state: TurnState) => (hasRun(state) ? state.spec.approvals?.timeoutMs : undefined);

function arm(timers: Map<string, NodeJS.Timeout>, id: string, at: number, fire: () => void): void {
  disarm(timers, id);
  const timer = setTimeout(() => {
    timers.delete(id);
    fire();
  }, Math.max(0, at - Date.now()));
  timer.unref();
  timers.set(id, timer);
}

function disarm(timers: Map<string, NodeJS.Timeout>, id: string): void {
  clearTimeout(timers.get(id));
  timers.delete(id);
}
