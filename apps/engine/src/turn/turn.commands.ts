import type { DropReason, ModelSpec, ToolCall, TurnLimits, Usage } from '@steerline/contracts';

/** What the runner and the command handlers ask of a turn. Imperative names. */
export type TurnCommand =
  | { type: 'StartTurn'; turnId: string; tenantId: string; conversationId: string; prompt: string; model: ModelSpec; limits: TurnLimits; engineId: string }
  | { type: 'SubmitSteer'; steerId: string; text: string }
  | { type: 'WithdrawSteer'; steerId: string }
  | { type: 'RecordModelAnswer'; step: number; text: string; toolCalls: ToolCall[]; usage?: Usage }
  /**
   * A tool's result. An error is shown to the model, which may act on it; a
   * `fatal` one (the tool itself says the work cannot go on) fails the turn.
   */
  | { type: 'RecordToolResult'; step: number; toolCallId: string; name: string; ok: boolean; output?: unknown; error?: { code: string; message: string }; fatal?: boolean; durationMs: number }
  | { type: 'FailTurn'; code: string; message: string }
  | { type: 'CancelTurn'; reason: string }
  /**
   * Adopt a running turn whose engine is gone, from the state its log holds.
   * `rerunnable`: names of the tools that may run again (idempotent); any other
   * call left unfinished ends `interrupted`. Past `limit` resumes the turn fails `engine_lost`.
   */
  | { type: 'ResumeTurn'; engineId: string; limit: number; rerunnable: readonly string[] }
  /** The turn's owner is gone or going: settle everything honestly. */
  | { type: 'AbandonTurn'; reason: Extract<DropReason, 'engine_lost' | 'engine_shutdown'> };
