// The curated entry of @steerline/ai-sdk: what an app that runs its agent with the AI SDK needs.
export { Steerline } from './steerline';
export { SteerlineTurn } from './turn';
export type { SteerlineHooks } from './attempt';
export { SteerlineClient, SteerlineClientError, TurnEnded, UnreportedCalls, type ApprovalOutcome, type ClientOptions, type Receipt, type StartExternalTurnOptions as StartTurnOptions } from '@steerline/client';
