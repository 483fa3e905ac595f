export { SteerlineClient, type ClientOptions } from './client';
export { SteerlineClientError } from './errors';
export { ExternalTurn, type ApprovalOutcome, type ModelAnswerReport } from './runner';
export { failFor, TurnEnded, UnreportedCalls } from './runner-errors';
export { readSse, type SseMessage } from './sse';
export type * from './types';
