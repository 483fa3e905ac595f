import type { ApprovalDecision, ApprovalPolicy, DropReason, ModelSpec, ToolCall, TurnLimits, Usage } from '@steerline/contracts';

/** What the runner and the command handlers ask of a turn. Imperative names. */
export type TurnCommand =
  | { type: 'StartTurn'; turnId: string; tenantId: string; conversationId: string; prompt: string; model: ModelSpec; limits: TurnLimits; engineId: string; approvals?: ApprovalPolicy }
  | { type: 'SubmitSteer'; steerId: string; text: string }
  | { type: 'WithdrawSteer'; steerId: string }
  | { type: 'RecordModelAnswer'; step: number; text: string; toolCalls: ToolCall[]; usage?: Usage }
  /**
   * A tool's result. An error is shown to the model, which may act on it; a
   * `fatal` one (the tool itself says the work cannot go on) fails the turn.
   */
  | { type: 'RecordToolResult'; step: number; toolCallId: string; name: string; ok: boolean; output?: unknown; error?: { code: string; message: string }; fatal?: boolean; durationMs: number }
  /** A person's decision on a waiting tool call, or the policy's timeout denying it. */
  | { type: 'DecideApproval'; toolCallId: string; decision: ApprovalDecision; reason?: string; by: 'user' | 'timeout' }
  | { type: 'FailTurn'; code: string; message: string }
  | { type: 'CancelTurn'; reason: string }
  /** The turn's owner is gone or going: settle everything honestly. */
  | { type: 'AbandonTurn'; reason: Extract<DropReason, 'engine_lost' | 'engine_shutdown'> };
