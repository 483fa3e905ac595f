import type { ApprovalDecision, DropReason, OnTurnEnd, ToolCall, Usage } from '@steerline/contracts';
import type { TurnSpec } from './turn.state';

/** A steer as `SubmitSteer` and `Interrupt` carry it. */
export interface SteerFields {
  steerId: string;
  text: string;
  onTurnEnd?: OnTurnEnd;
  expiresAt?: string;
}

/** What the runner and the command handlers ask of a turn. Imperative names. */
export type TurnCommand =
  | ({ type: 'StartTurn'; turnId: string; tenantId: string; conversationId: string; engineId: string } & TurnSpec)
  /** Queues the turn behind the conversation's running one; `StartTurn` or `CancelTurn` follows. */
  | ({ type: 'QueueTurn'; position: number; fromTurnId?: string } & TurnSpec)
  /** `expiresAt`: the shell turns a steer's `ttlMs` into a deadline, as the decider has no clock. */
  | ({ type: 'SubmitSteer' } & SteerFields)
  /**
   * An urgent steer: accepted like `SubmitSteer`, then the step is cut (docs/design.md §2, "Urgency").
   * The shell's facts: `partialText`/`usage`, what the step's streamed answer has written so far
   * (absent: nothing); `uninterruptible`, the tools that are waited for; `elapsedMs`, how long each running call ran.
   * `cutBy: "runner"`: an external turn's runner holds the step (docs/runner-protocol.md, "Interrupts"): an
   * answer being written is cut when the runner reports it (`RecordInterruption`), not here.
   */
  | ({ type: 'Interrupt'; partialText?: string; usage?: Usage; uninterruptible: readonly string[]; elapsedMs?: Readonly<Record<string, number>>; cutBy?: 'runner' } & SteerFields)
  /**
   * An external turn's runner stopped step `step` for an urgent steer: its answer, not reported, ends
   * `ModelInterrupted {partialText}`; its calls still running end `interrupted`. Nothing to cut (the
   * step ended first, or no urgent steer waits) decides nothing.
   */
  | { type: 'RecordInterruption'; step: number; partialText?: string; usage?: Usage; elapsedMs?: Readonly<Record<string, number>> }
  | { type: 'WithdrawSteer'; steerId: string }
  | { type: 'EditSteer'; steerId: string; text: string }
  /** A steer's deadline passed: it is dropped `expired` if, and only if, it is still queued. */
  | { type: 'ExpireSteer'; steerId: string }
  /**
   * `nextTurnId`: an id the shell mints for the follow-up turn, used only if
   * this answer moves the turn's first `next_turn` steer (docs/design.md §8).
   */
  | { type: 'RecordModelAnswer'; step: number; text: string; toolCalls: ToolCall[]; usage?: Usage; nextTurnId?: string }
  /**
   * A tool's result. An error is shown to the model, which may act on it; a
   * `fatal` one (the tool itself says the work cannot go on) fails the turn.
   */
  | { type: 'RecordToolResult'; step: number; toolCallId: string; name: string; ok: boolean; output?: unknown; error?: { code: string; message: string }; fatal?: boolean; durationMs: number }
  /** A person's decision on a waiting tool call, or the policy's timeout denying it. */
  | { type: 'DecideApproval'; toolCallId: string; decision: ApprovalDecision; reason?: string; by: 'user' | 'timeout' }
  | { type: 'FailTurn'; code: string; message: string }
  | { type: 'CancelTurn'; reason: string }
  /**
   * Adopt a running turn whose engine is gone, from the state its log holds.
   * `rerunnable`: names of the tools that may run again (idempotent); any other
   * call left unfinished ends `interrupted`. Past `limit` resumes the turn fails `engine_lost`.
   */
  | { type: 'ResumeTurn'; engineId: string; limit: number; rerunnable: readonly string[]; nextTurnId?: string }
  /** The turn's owner is gone or going: settle everything honestly. */
  | { type: 'AbandonTurn'; reason: Extract<DropReason, 'engine_lost' | 'engine_shutdown'> };
