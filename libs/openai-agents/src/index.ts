// The curated entry of @steerline/openai-agents: what an app that runs its agent with the OpenAI Agents SDK needs.
export { Steerline } from './steerline';
export { SteerlineTurn, type TurnRunOptions } from './turn';
export { SteerlineClient, SteerlineClientError, TurnEnded, UnreportedCalls, type ApprovalOutcome, type ClientOptions, type Receipt, type StartExternalTurnOptions as StartTurnOptions } from '@steerline/client';
