export { SteerlineClient, type ClientOptions } from './client';
export { SteerlineClientError } from './errors';
export { ExternalTurn, StepInterrupted, type ApprovalOutcome, type InterruptedReport, type ModelAnswerReport } from './runner';
export { ExternalTurns, failFor, reportStop, StepAnswer, TurnEnded, UnreportedCalls, type AfterStop, type StartExternalTurnOptions } from './adapter-kit';
export { readSse, type SseMessage } from './sse';
export type * from './types';
